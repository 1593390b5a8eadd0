"""A loop whose whole body is a guard on its own variable runs only the iterations the
guard keeps (`eqsat/guards.py`): the same iterations in the same order as the loop as
written, checked on generated guards, and band and triangle nests written with `if`
computing what `reference` does on both backends."""
from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eqsat
from conftest import rel_err
from eqsat import guards

OPS = ["<", "<=", ">", ">=", "==", "!="]


@st.composite
def affine(draw, names=("i", "N")):
    terms = [str(draw(st.integers(-3, 3)))]
    for n in names:
        c = draw(st.integers(-2, 2))
        if c:
            terms.append(f"{c} * {n}")
    return " + ".join(terms)


@st.composite
def comparison(draw):
    kind = draw(st.sampled_from(["var_left", "var_right", "abs", "chain", "scaled", "data"]))
    op = draw(st.sampled_from(OPS))
    e = draw(affine())
    if kind == "var_left":
        return f"j {op} {e}"
    if kind == "var_right":
        return f"{e} {op} j"
    if kind == "abs":
        return f"abs(j - {e}) {draw(st.sampled_from(['<', '<=']))} {draw(st.integers(-1, 4))}"
    if kind == "chain":
        return f"{e} {draw(st.sampled_from(['<', '<=']))} j {draw(st.sampled_from(['<', '<=']))} {draw(affine())}"
    if kind == "scaled":  # a coefficient other than 1 on j, or j on both sides: left as a guard
        return f"{draw(st.sampled_from(['2 * j', '-j', 'j + j - j']))} {op} {e}"
    return "x[j] > 0"


def _visits(src: str, n: int, x) -> list:
    out: list = []
    exec(compile(src, "<guard>", "exec"), {"N": n, "x": x, "out": out})
    return out


@settings(max_examples=300, deadline=None)
@given(conds=st.lists(comparison(), min_size=1, max_size=3), lo=affine(names=("i",)),
       hi=st.sampled_from(["N", "N - 1", "i + 3", "2 * N"]), n=st.integers(0, 7))
def test_tightened_loops_visit_the_same_iterations_in_order(conds, lo, hi, n):
    src = f"""
for i in range(N):
    for j in range({lo}, {hi}):
        if {' and '.join(f'({c})' for c in conds)}:
            out.append((i, j))
"""
    x = np.sin(np.arange(-40, 40, dtype=np.float64))  # (negative indices read from the end, as in Python)
    tree = ast.parse(src)
    guards.tighten(tree, {"N"})
    assert _visits(ast.unparse(tree), n, x) == _visits(src, n, x), ast.unparse(tree)


def test_a_band_and_a_triangle_written_as_guards_get_bounds():
    tree = ast.parse("""
for i in range(N):
    for j in range(N):
        if abs(i - j) <= 1:
            y[i] += A[i, j]
    for k in range(N):
        if k <= i and x[k] > 0:
            y[i] += x[k]
""")
    guards.tighten(tree, {"N"})
    text = ast.unparse(tree)
    assert "if abs" not in text and "if x[k] > 0" in text and "k <= i" not in text, text


def test_a_name_the_nest_assigns_is_no_bound():
    src = """
for i in range(N):
    m = i
    for j in range(N):
        if j < m:
            y[i] += 1
"""
    tree = ast.parse(src)
    guards.tighten(tree, {"N"})
    assert ast.unparse(tree) == ast.unparse(ast.parse(src))


BAND = '''
@program
def band(A: f32["N", "N"], x: f32["N"], B: f32["N", "N"]) -> tuple[f32["N"], f32["N", "N"]]:
    y = zeros((N,))
    for i in range(N):
        for j in range(N):
            if abs(i - j) <= 1:
                y[i] += A[i, j] * x[j]
    C = zeros((N, N))
    for i in range(N):
        for j in range(N):
            if j <= i and B[i, j] > 0:
                C[i, j] = A[i, j] * B[i, j]
    return y, C
'''


@pytest.mark.parametrize("n", [1, 2, 48])
def test_guarded_nests_compute_what_the_program_does(tmp_program, n):
    prog = tmp_program(BAND)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            rng.standard_normal((n, n)).astype(np.float32)]
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, {"N": n}, target="cpu")
    for backend in ("numpy", "triton"):
        got = plan.run(*args, backend=backend)
        assert all(rel_err(g, w) < 1e-5 for g, w in zip(got, want)), (backend, plan)
