"""Generated programs for the benchmarks (written to files: @program reads source)."""
from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

_DIR = Path(tempfile.mkdtemp(prefix="eqsat_bench_"))


def load_source(src: str, name: str):
    from eqsat.ir import Program

    path = _DIR / f"{name}.py"
    path.write_text("from eqsat import *\n" + src)
    spec = importlib.util.spec_from_file_location(f"bench_gen_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return next(v for v in vars(mod).values() if isinstance(v, Program))


def mlp_chain(n: int):
    """h = relu(h @ w_i + b_i), n times, with library calls."""
    params = ", ".join(f'w{i}: f32["D", "D"], b{i}: f32["D"]' for i in range(n))
    body = "\n".join(f"    h = relu({'x' if i == 0 else 'h'} @ w{i} + b{i})" for i in range(n))
    src = f'''
@program
def mlp{n}(x: f32["M", "D"], {params}) -> f32["M", "D"]:
{body}
    return h
'''
    return load_source(src, f"mlp{n}")


def loop_chain(n: int):
    """The same chain with every layer written as a loop nest with a scalar accumulator."""
    params = ", ".join(f'w{i}: f32["D", "D"], b{i}: f32["D"]' for i in range(n))
    layers = []
    for i in range(n):
        src_buf = "x" if i == 0 else f"h{i - 1}"
        layers.append(f'''    h{i} = empty((M, D))
    for i in range(M):
        for j in range(D):
            acc = 0.0
            for k in range(D):
                acc += {src_buf}[i, k] * w{i}[k, j]
            h{i}[i, j] = relu(acc + b{i}[j])''')
    body = "\n".join(layers)
    src = f'''
@program
def loops{n}(x: f32["M", "D"], {params}) -> f32["M", "D"]:
{body}
    return h{n - 1}
'''
    return load_source(src, f"loops{n}")


def linear_bias_relu():
    src = '''
@program
def linear(x: f32["M", "K"], w: f32["N", "K"], bias: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += x[i, k] * w[j, k]
            y[i, j] = relu(acc + bias[j])
    return y
'''
    return load_source(src, "linear")


def long_sum(n: int):
    terms = " + ".join(f"x{i}" for i in range(n))
    params = ", ".join(f'x{i}: f32["M"]' for i in range(n))
    src = f'''
@program
def sum{n}({params}) -> f32["M"]:
    return {terms}
'''
    return load_source(src, f"sum{n}")


def elementwise_chain(n: int):
    """`n` elementwise layers written at tensor level, cycling through three forms
    (relu(h * 0.9 + 0.1); h * 1.05 - 0.05; h + b * 0.01): each output depends on the
    whole chain, and the values stay near 1 however long it is (the map contracts)."""
    forms = ("relu({h} * 0.9 + 0.1)", "{h} * 1.05 - 0.05", "{h} + b * 0.01")
    body = "\n".join(f"    h = {forms[i % 3].format(h='x' if i == 0 else 'h')}" for i in range(n))
    src = f'''
@program
def chain{n}(x: f32["M", "D"], b: f32["D"]) -> f32["M", "D"]:
{body}
    return h
'''
    return load_source(src, f"chain{n}")


def long_body(n: int):
    """One reduction loop whose body has `n` `acc +=` statements (products of a and b
    scaled by a constant), the build-step stress case of tests/test_limits.py, larger."""
    terms = "\n".join(f"            acc += a[i, {k % 4}] * b[{k % 4}, j] * {1.0 + k / 64}" for k in range(n))
    src = f'''
@program
def body{n}(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
{terms}
            c[i, j] = acc
    return c
'''
    return load_source(src, f"body{n}")


def elif_chain_source(n: int, local: bool = False) -> str:
    """A program `p` whose one loop body is an if/elif chain of `n` branches, each storing
    `y[i]` (with `local`: through a local `u` the branch sets first): for the tests'
    `tmp_program` (tests/conftest.py shares it); `elif_chain` loads it."""
    if local:
        branches = "\n".join(f"        elif t < {-1 + 2 * q / n:.3f}:\n            u = t * {q * 0.1:.2f}\n"
                             f"            y[i] = u + {q}.0" for q in range(1, n))
    else:
        branches = "\n".join(f"        elif t < {-1 + 2 * q / n:.3f}:\n            y[i] = t * {q * 0.1:.2f}"
                             for q in range(1, n))
    return f'''
@program
def p(x: f32["M"]) -> f32["M"]:
    y = empty((M,))
    for i in range(M):
        t = x[i]
        if t < -1.0:
            y[i] = 0.0
{branches}
        else:
            y[i] = t
    return y
'''


def elif_chain(n: int):
    """`elif_chain_source(n)`, loaded: the Python passes of the nest's analysis grow as n^2
    (if-conversion guards each branch by every level around it)."""
    return load_source(elif_chain_source(n), f"elif{n}")


def element_updates_source(n: int) -> str:
    """A program `p` of `n` top-level element updates of a 64-element `y`, unrolled by hand
    (`y[3] = y[3] + x[21] * 2.0`): each a statement of its own, `n` nests where the time
    limit keeps them as written (for `tmp_program`; `element_updates` loads it)."""
    lines = "\n".join(f"    y[{i % 64}] = y[{i % 64}] + x[{(i * 7) % 64}] * {1 + i % 5}.0" for i in range(n))
    return f'''
@program
def p(x: f32["M"]) -> f32["M"]:
    y = zeros((M,))
{lines}
    return y
'''


def element_updates(n: int):
    return load_source(element_updates_source(n), f"updates{n}")
