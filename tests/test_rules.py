"""Goal tests (start and goal in one e-class, whatever the cost model says) and
failure tests (a guard must stop the rule), one group per rule family."""
from __future__ import annotations

import pytest
from egglog import eq, var

import eqsat
import eqsat.rules
from conftest import UNCACHE, assert_matches_reference, saturated
from eqsat.sorts import Dims, Ixs, Sc, Ten, output

A, B = Ten.input("a"), Ten.input("b")
ALL = None  # every family


def goal(eg, expr):
    eg.check(eq(output(0)).to(expr))


def never(eg, expr):
    with pytest.raises(Exception):
        eg.check(eq(output(0)).to(expr))


MATMUL = """
@program
def mm(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                c[i, j] += a[i, k] * b[k, j]
    return c
"""
DIMS = {"M": 5, "N": 4, "K": 3}


# ---------------------------------------------------------------- matmul
@pytest.mark.parametrize("order", ["ijk", "ikj", "kij", "jki"])
def test_matmul_any_loop_order(tmp_program, order):
    loops = {"i": "M", "j": "N", "k": "K"}
    body, ind = "", "    "
    for v in order:
        body += f"{ind}for {v} in range({loops[v]}):\n"
        ind += "    "
    body += f"{ind}c[i, j] += a[i, k] * b[k, j]\n"
    prog = tmp_program(f"""
@program
def mm(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
{body}    return c
""")
    eg, _ = saturated(prog, DIMS, ["matmul"])
    goal(eg, Ten.matmul(A, B))


def test_matmul_scalar_accumulator_and_swapped_product(tmp_program):
    prog = tmp_program("""
@program
def mm(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += b[k, j] * a[i, k]
            c[i, j] = acc
    return c
""")
    eg, _ = saturated(prog, DIMS, ["matmul"])
    goal(eg, Ten.matmul(A, B))


def test_matmul_batched_and_shared_operand(tmp_program):
    prog = tmp_program("""
@program
def bmm(a: f32["B", "M", "K"], b: f32["B", "K", "N"], w: f32["K", "N"]) -> tuple[f32["B", "M", "N"], f32["B", "M", "N"]]:
    c = zeros((B, M, N))
    d = zeros((B, M, N))
    for r in range(B):
        for i in range(M):
            for j in range(N):
                for k in range(K):
                    c[r, i, j] += a[r, i, k] * b[r, k, j]
                    d[r, i, j] += a[r, i, k] * w[k, j]
    return c, d
""")
    eg, _ = saturated(prog, {"B": 2, **DIMS}, ["matmul"])
    goal(eg, Ten.matmul(A, B))
    eg.check(eq(output(1)).to(Ten.matmul(A, Ten.input("w"))))


def test_matmul_transposed_operand_needs_transpose_family(tmp_program):
    prog = tmp_program(MATMUL.replace('b: f32["K", "N"]', 'b: f32["N", "K"]').replace("b[k, j]", "b[j, k]"))
    eg, _ = saturated(prog, DIMS, ["matmul"])
    never(eg, Ten.matmul(A, Ten.transpose(B, "1 0")))
    eg, _ = saturated(prog, DIMS, ["matmul", "transpose"])
    goal(eg, Ten.matmul(A, Ten.transpose(B, "1 0")))


FAIL_CASES = {
    # last write wins: assigns instead of accumulating
    "last_write": ("c[i, j] = a[i, k] * b[k, j]", "range(K)"),
    # a diagonal read of b: not a contraction of two independent axes
    "diagonal": ("c[i, j] += a[i, k] * b[k, k]", "range(K)"),
    # partial range: the reduction misses one k
    "partial_range": ("c[i, j] += a[i, k] * b[k, j]", "range(K - 1)"),
    # offset index: reads the next column
    "offset": ("c[i, j] += a[i, k] * b[k + 1, j]", "range(K - 1)"),
    # in-place dependency: reads the buffer being written
    "in_place": ("c[i, j] += c[i, k] * b[k, j]", "range(K)"),
}


@pytest.mark.parametrize("name", sorted(FAIL_CASES))
def test_matmul_guard_stops(tmp_program, name):
    stmt, rng = FAIL_CASES[name]
    src = MATMUL.replace("c[i, j] += a[i, k] * b[k, j]", stmt).replace("for k in range(K)", f"for k in {rng}")
    if name == "in_place":
        src = src.replace('b: f32["K", "N"]', 'b: f32["N", "N"]').replace("range(K)", "range(N)")
        dims = {"M": 4, "N": 4, "K": 4}
    else:
        dims = DIMS
    prog = tmp_program(src)
    eg, g = saturated(prog, dims, ALL)
    assert all(n.op != "Ten.matmul" for ns in g.classes.values() for n in ns), name
    plan = eqsat.optimize(prog, dims)
    assert all(k.kind != "matmul" for k in plan.kernels)
    assert_matches_reference(plan, prog, dims)


def test_max_plus_is_not_a_matmul(tmp_program):
    prog = tmp_program("""
@program
def maxplus(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = -1000.0
            for k in range(K):
                acc = max(acc, a[i, k] + b[k, j])
            c[i, j] = acc
    return c
""")
    eg, g = saturated(prog, DIMS, ALL)
    assert all(n.op != "Ten.matmul" for ns in g.classes.values() for n in ns)
    plan = eqsat.optimize(prog, DIMS)
    assert_matches_reference(plan, prog, DIMS)


# ---------------------------------------------------------------- inline / anti-inline
def test_inline_substitutes_a_temporary(tmp_program):
    prog = tmp_program("""
@program
def two(x: f32["M", "N"]) -> f32["M", "N"]:
    t = empty((M, N))
    for i in range(M):
        for j in range(N):
            t[i, j] = x[i, j] * 2.0
    y = empty((M, N))
    for p in range(M):
        for q in range(N):
            y[p, q] = t[p, q] + 1.0
    return y
""")
    d, idx = var("d", Dims), var("idx", Ixs)
    target = Ten.compute(d, Sc.add(Sc.mul(Sc.load(Ten.input("x"), idx), Sc.lit(2.0)), Sc.lit(1.0)))
    eg, _ = saturated(prog, {"M": 3, "N": 2}, [])
    never(eg, target)
    eg, _ = saturated(prog, {"M": 3, "N": 2}, ["inline"])
    goal(eg, target)
    plan = eqsat.optimize(prog, {"M": 3, "N": 2})
    assert len(plan.kernels) == 1 and plan.kernels[0].kind == "pointwise"


def test_inline_expands_library_matmul_in_loop(tmp_program):
    prog = tmp_program("""
@program
def hyb(a: f32["B", "M", "K"], w: f32["K", "N"]) -> f32["B", "M", "N"]:
    c = empty((B, M, N))
    for r in range(B):
        c[r] = a[r] @ w
    return c
""")
    dims = {"B": 2, "M": 3, "K": 4, "N": 5}
    eg, _ = saturated(prog, dims, ["matmul"])
    never(eg, Ten.matmul(A, Ten.input("w")))
    eg, _ = saturated(prog, dims, ["matmul", "inline"])
    goal(eg, Ten.matmul(A, Ten.input("w")))


def test_anti_inline_exposes_the_reduction(tmp_program):
    src = """
@program
def lin(x: f32["M", "K"], w: f32["K", "N"], bias: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[k, j]
            y[i, j] = relu(acc + bias[j])
    return y
"""
    prog = tmp_program(src)
    mm = Ten.matmul(Ten.input("x"), Ten.input("w"))
    fused = Ten.fused(var("d", Dims), var("s", Sc), mm)
    eg, _ = saturated(prog, DIMS, ["matmul", "epilogue"])
    never(eg, fused)
    eg, _ = saturated(prog, DIMS, ["matmul", "epilogue", "anti_inline"])
    goal(eg, fused)


# ---------------------------------------------------------------- uncache / transpose


def test_uncache_reads_through_a_transposed_copy(tmp_program):
    prog = tmp_program(UNCACHE)
    want = Ten.matmul(A, Ten.transpose(B, "1 0"))
    eg, _ = saturated(prog, DIMS, ["matmul"])
    never(eg, want)
    eg, _ = saturated(prog, DIMS, ["matmul", "uncache"])
    goal(eg, want)


def test_uncache_copy_elimination(tmp_program):
    prog = tmp_program("""
@program
def cp(a: f32["M", "N"]) -> f32["M", "N"]:
    t = empty((M, N))
    for i in range(M):
        for j in range(N):
            t[i, j] = a[i, j]
    return t
""")
    eg, _ = saturated(prog, {"M": 3, "N": 2}, ["uncache"])
    goal(eg, A)


def test_transpose_folding_algebra(tmp_program):
    prog = tmp_program("""
@program
def tt(a: f32["M", "K"], b: f32["K", "N"]) -> f32["N", "M"]:
    return transpose(a @ b, (1, 0))
""")
    eg, _ = saturated(prog, DIMS, ["transpose"])
    goal(eg, Ten.matmul(Ten.transpose(B, "1 0"), Ten.transpose(A, "1 0")))
    prog2 = tmp_program("""
@program
def t2(a: f32["M", "K"]) -> f32["M", "K"]:
    return a.T.T
""")
    eg, _ = saturated(prog2, DIMS, ["transpose"])
    goal(eg, A)


# ---------------------------------------------------------------- epilogue
@pytest.mark.parametrize("epi,ops", [
    ("relu(acc + bias[j])", {"add", "relu"}),
    ("acc + bias[i]", {"add"}),
    ("alpha * acc + r[i, j]", {"mul", "add"}),
    ("sigmoid(acc) * acc", {"sigmoid", "mul"}),
    ("max(acc, 0.0) - r[j, i]", {"max", "sub"}),
])
def test_epilogue_fusion(tmp_program, epi, ops):
    prog = tmp_program(f"""
@program
def ep(alpha: f32, a: f32["M", "K"], b: f32["K", "N"], bias: f32["N"], r: f32["M", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += a[i, k] * b[k, j]
            y[i, j] = {epi}
    return y
""".replace('bias: f32["N"]', 'bias: f32["M"]' if "bias[i]" in epi else 'bias: f32["N"]')
       .replace('r: f32["M", "N"]', 'r: f32["N", "M"]' if "r[j, i]" in epi else 'r: f32["M", "N"]'))
    dims = {"M": 4, "N": 4, "K": 3}
    plan = eqsat.optimize(prog, dims)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan
    assert ops <= set(plan.kernels[0].epilogue), plan
    assert_matches_reference(plan, prog, dims)


def test_accumulation_from_a_known_value_becomes_an_epilogue_add(tmp_program):
    prog = tmp_program("""
@program
def init(a: f32["M", "K"], b: f32["K", "N"], bias: f32["N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = bias[j]
            for k in range(K):
                c[i, j] += a[i, k] * b[k, j]
    return c
""")
    plan = eqsat.optimize(prog, DIMS)
    assert [(k.kind, k.epilogue) for k in plan.kernels] == [("matmul", ["add"])], plan
    assert_matches_reference(plan, prog, DIMS)


def test_sanity_rules_catch_an_unsound_rule(tmp_program):
    """The sanity ruleset runs in every optimize(): an unsound user rule that merges two
    different constants is caught instead of producing wrong numbers."""
    from egglog import f64, rewrite, ruleset

    @ruleset
    def unsound(x: f64):
        yield rewrite(Sc.lit(2.0)).to(Sc.lit(3.0))  # 2 = 3: false

    prog = tmp_program("""
@program
def p(x: f32["M"]) -> f32["M"]:
    return x * 2.0 + 3.0
""")
    eqsat.optimize(prog, {"M": 3})
    with pytest.raises(Exception, match="two different constants"):
        eqsat.optimize(prog, {"M": 3}, rules=[unsound])


# ---------------------------------------------------------------- split loops, several K axes
def test_split_loop_becomes_a_matmul_through_a_view(tmp_program):
    prog = tmp_program("""
@program
def tiled(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i0 in range(M // 4):
        for j in range(N):
            for i1 in range(4):
                for k in range(K):
                    c[i0 * 4 + i1, j] += a[i0 * 4 + i1, k] * b[k, j]
    return c
""")
    dims = {"M": 8, "N": 5, "K": 6}
    plan = eqsat.optimize(prog, dims)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan
    assert_matches_reference(plan, prog, dims)


def test_split_loop_guard_partial_tiles(tmp_program):
    """Tiles that do not cover the axis (M=10 with tiles of 4) must not be read through a view.
    Merged into one loop over rows 0..7 of 10, the nest is a matmul whose epilogue keeps the
    old value (zero) of rows 8 and 9: a masked form, never an unmasked product."""
    prog = tmp_program("""
@program
def tiled(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i0 in range(M // 4):
        for j in range(N):
            for i1 in range(4):
                for k in range(K):
                    c[i0 * 4 + i1, j] += a[i0 * 4 + i1, k] * b[k, j]
    return c
""")
    dims = {"M": 10, "N": 5, "K": 6}
    eg, g = saturated(prog, dims, ALL)
    assert all(n.op != "Ten.reshape" for ns in g.classes.values() for n in ns)
    plan = eqsat.optimize(prog, dims)
    assert all("select" in k.epilogue for k in plan.kernels if k.kind == "matmul"), plan
    assert_matches_reference(plan, prog, dims)


@pytest.mark.parametrize("order", ["kl", "lk"])
def test_contraction_over_two_axes_is_one_matmul(tmp_program, order):
    loops = {"k": "K", "l": "L"}
    prog = tmp_program(f"""
@program
def two_k(a: f32["M", "K", "L"], b: f32["K", "L", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for {order[0]} in range({loops[order[0]]}):
                for {order[1]} in range({loops[order[1]]}):
                    c[i, j] += a[i, k, l] * b[k, l, j]
    return c
""")
    dims = {"M": 4, "N": 3, "K": 5, "L": 2}
    plan = eqsat.optimize(prog, dims)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan
    assert_matches_reference(plan, prog, dims)


# ---------------------------------------------------------------- algebra under a sum
@pytest.mark.parametrize("stmt,ops", [
    ("acc += alpha * a[i, k] * b[k, j]", {"mul"}),
    ("acc += 2.0 * (a[i, k] * b[k, j])", {"mul"}),
    ("acc -= a[i, k] * b[k, j]", {"neg"}),
])
def test_factors_and_negation_leave_the_sum(tmp_program, stmt, ops):
    src = f"""
@program
def sc(alpha: f32, a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                {stmt}
            y[i, j] = acc
    return y
"""
    prog = tmp_program(src)
    dims = {"M": 5, "N": 4, "K": 9}
    plan = eqsat.optimize(prog, dims)
    assert [k.kind for k in plan.kernels] == ["matmul"], plan
    assert ops <= set(plan.kernels[0].epilogue), plan
    assert_matches_reference(plan, prog, dims)
    without = eqsat.optimize(prog, dims, rules=[f for f in eqsat.rules.FAMILIES if f != "algebra"])
    assert all(k.kind != "matmul" for k in without.kernels), without


@pytest.mark.parametrize("extents", [(2, 3, 4), (3, 3, 3)], ids=["distinct", "equal"])
@pytest.mark.parametrize("perm", [(0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)])
def test_uncache_reads_every_permuted_copy_of_a_3d_tensor_as_a_view(tmp_program, perm, extents):
    """A loop nest that copies `a` with its axes permuted (the two-rule form of uncache:
    the copy's variables and extents permuted as lists of their own, then one join) becomes
    a view of `a`, no kernel; with equal extents too, where a wrong match would give the
    source itself or another permutation, and the results must still be reference's."""
    import numpy as np

    names = ["P", "Q", "R"]
    out_dims = [names[p] for p in perm]
    loops = "".join(f"{'    ' * (b + 1)}for i{b} in range({out_dims[b]}):\n" for b in range(3))
    src_idx = [""] * 3
    for b in range(3):
        src_idx[perm[b]] = f"i{b}"  # numpy: transpose(a, perm)[i0, i1, i2] = a[j], j[perm[b]] = i_b
    prog = tmp_program(f"""
@program
def cp(a: f32["P", "Q", "R"]) -> f32[{", ".join(repr(d) for d in out_dims)}]:
    t = empty(({", ".join(out_dims)},))
{loops}{'    ' * 4}t[i0, i1, i2] = a[{", ".join(src_idx)}]
    return t
""")
    dims = dict(zip(names, extents))
    plan = eqsat.optimize(prog, dims, rules=["uncache"])
    assert not plan.kernels, plan
    a = np.random.default_rng(1).standard_normal(extents).astype(np.float32)
    got = plan.run(a)
    assert np.array_equal(got, np.transpose(a, perm))
    assert np.array_equal(got, eqsat.reference(prog, a))
