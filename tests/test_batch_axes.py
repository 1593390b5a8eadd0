"""`@` with more than one batch axis (numpy's matmul over stacks of matrices): attention's
(B, H, S, D) @ (B, H, D, S), written with `@`, np.einsum, a loop over a batch axis around
a batched `@`, or as five loops. The lowering merges the batch axes into one with reshapes
(`lower._Lowerer.matmul`), and computes an elementwise expression over such a product over
the merged axes too (`_Lowerer.batch_merged`), so it is the matmul's epilogue; the rules
find the same matmul in the loop-written forms (rules/matmul.py, "Batch2"). Every plan
runs on both backends against `reference`."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err

PRELUDE = "import numpy as np\n"

PROGRAMS = {  # source, whether a plan at the larger size must be matmul kernels only
    "attention": ('''
@program
def p(q: f32["B", "H", "S", "D"], k: f32["B", "H", "S", "D"], v: f32["B", "H", "S", "D"]) -> f32["B", "H", "S", "D"]:
    s = q @ transpose(k, (0, 1, 3, 2))
    return relu(s) @ v
''', True),
    "softmax_attention": ('''
@program
def p(q: f32["B", "H", "S", "D"], k: f32["B", "H", "S", "D"], v: f32["B", "H", "S", "D"]) -> f32["B", "H", "S", "D"]:
    s = q @ np.swapaxes(k, -1, -2) * 0.5
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / np.sum(e, axis=-1, keepdims=True) @ v
''', False),
    "heads_first": ('''
@program
def p(q: f32["B", "S", "H", "D"], k: f32["B", "S", "H", "D"]) -> f32["B", "H", "S", "S"]:
    # (methods: a tuple of axes, the axes as arguments, swapaxes, all axes reversed)
    return q.transpose((0, 2, 1, 3)) @ k.transpose(0, 2, 3, 1) + k.swapaxes(1, 2) @ q.transpose().transpose().swapaxes(1, 2).swapaxes(2, 3)
''', True),
    "rows_of_every_batch": ('''
@program
def p(x: f32["B", "H", "S", "D"], w: f32["D", "E"], b: f32["E"]) -> f32["B", "H", "S", "E"]:
    return relu(x @ w + b)
''', True),
    "shared_left": ('''
@program
def p(w: f32["S", "S"], x: f32["B", "H", "S", "D"]) -> f32["B", "H", "S", "D"]:
    return w @ x
''', True),
    "maximum_of_a_product": ('''
@program
def p(x: f32["B", "H", "S", "D"], y: f32["B", "H", "D", "S"], z: f32["B", "H", "S", "S"]) -> f32["B", "H", "S", "S"]:
    return 2.0 * z + maximum(x @ y, z) + minimum(x @ y, 0.0)
''', False),
    "vectors": ('''
@program
def p(x: f32["B", "H", "S", "D"], u: f32["D"], r: f32["S"]) -> tuple[f32["B", "H", "S"], f32["B", "H", "D"]]:
    return x @ u, r @ x
''', False),
    "three_batch_axes": ('''
@program
def p(a: f32["A", "B", "H", "S", "D"], c: f32["A", "B", "H", "D", "S"]) -> f32["A", "B", "H", "S", "S"]:
    return a @ c + 1.0
''', True),
    "loop_around_batched": ('''
@program
def p(q: f32["B", "H", "S", "D"], k: f32["B", "H", "D", "S"]) -> f32["B", "H", "S", "S"]:
    out = empty((B, H, S, S))
    for b in range(B):
        out[b] = q[b] @ k[b]
    return out
''', True),
    "einsum": ('''
@program
def p(q: f32["B", "H", "S", "D"], k: f32["B", "H", "S", "D"]) -> f32["B", "H", "S", "S"]:
    return np.einsum("bhqd,bhkd->bhqk", q, k)
''', True),
    "five_loops": ('''
@program
def p(q: f32["B", "H", "S", "D"], k: f32["B", "H", "S", "D"]) -> f32["B", "H", "S", "S"]:
    out = empty((B, H, S, S))
    for b in range(B):
        for h in range(H):
            for i in range(S):
                for j in range(S):
                    acc = 0.0
                    for d in range(D):
                        acc += q[b, h, i, d] * k[b, h, j, d]
                    out[b, h, i, j] = acc
    return out
''', True),
}


@pytest.mark.parametrize("target", ["h100", "cpu"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_several_batch_axes(tmp_program, name, target):
    src, all_matmul = PROGRAMS[name]
    prog = tmp_program(PRELUDE + src)
    for sizes in ({"A": 1, "B": 1, "H": 2, "S": 1, "D": 3, "E": 1}, {"A": 2, "B": 2, "H": 3, "S": 16, "D": 8, "E": 5}):
        dims = {d: n for d, n in sizes.items() if d in prog.dims}
        args = random_args(prog, dims, seed=3)
        want = eqsat.reference(prog, *args)
        plan = eqsat.optimize(prog, dims, target=target)
        for backend in ("numpy", "triton"):
            got = plan.run(*args, backend=backend)
            got, ref = (got, want) if isinstance(want, tuple) else ((got,), (want,))
            assert all(rel_err(g, w) < 1e-5 for g, w in zip(got, ref)), (name, dims, backend, plan)
        if sizes["S"] > 1:
            kinds = [k.kind for k in plan.kernels]
            assert "matmul" in kinds or name == "vectors", plan
            if all_matmul:
                assert set(kinds) == {"matmul"}, plan


@pytest.mark.parametrize("a, b", [('f32["B", "H", "S", "D"]', 'f32["H", "D", "S"]'),
                                  ('f32["B", "H", "S", "D"]', 'f32["H", "B", "D", "S"]')])
def test_batch_axes_that_differ_are_refused_with_their_location(tmp_program, a, b):
    with pytest.raises(eqsat.ProgramError, match=r"prog_\d+\.py:\d+:\d+: batch axes differ in `@`"):
        tmp_program(f'''
@program
def p(x: {a}, y: {b}) -> f32["B", "H", "S", "S"]:
    return x @ y
''')
