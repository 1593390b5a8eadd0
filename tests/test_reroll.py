"""Loops written in pieces are one loop for the functional form (`eqsat/reroll.py`): a
matmul whose k loop is split in two ranges, unrolled (as statements or as one sum), or peeled (its first term as the
accumulator's start, its last after the loop), a register-blocked j loop (two accumulators),
and an epilogue unrolled in j, are one
matmul kernel with its epilogue. Pieces that are not one loop (a gap, an overlap, copies
that are not consecutive, a start that is not the first term, a term that reads the
accumulator) stay as written. Every plan runs on both backends against `reference`."""
from __future__ import annotations

import pytest

import eqsat
from conftest import random_args, rel_err

HEAD = '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
'''
TAIL = '''
            y[i, j] = relu(acc + b[j])
    return y
'''


def _matmul(body: str) -> str:
    return HEAD + "".join(" " * 12 + line + "\n" for line in body.strip("\n").splitlines()) + TAIL


ONE_LOOP = {
    "split_in_two_ranges": _matmul('''
acc = 0.0
for k in range(K // 2):
    acc += x[i, k] * w[k, j]
for k in range(K // 2, K):
    acc += x[i, k] * w[k, j]
'''),
    "unrolled_by_two": _matmul('''
acc = 0.0
for k in range(0, K, 2):
    acc += x[i, k] * w[k, j]
    acc += x[i, 1 + k] * w[k + 1, j]
'''),
    "unrolled_in_one_expression": _matmul('''
acc = 0.0
for k in range(0, K, 2):
    acc = w[k + 1, j] * x[i, k + 1] + x[i, k] * w[k, j] + acc
'''),
    "first_term_peeled": _matmul('''
acc = x[i, 0] * w[0, j]
for k in range(1, K):
    acc += x[i, k] * w[k, j]
'''),
    "last_term_peeled": _matmul('''
acc = 0.0
for k in range(K - 1):
    acc += x[i, k] * w[k, j]
acc += x[i, K - 1] * w[K - 1, j]
'''),
    "unrolled_with_a_remainder": _matmul('''
acc = 0.0
for k in range(0, K // 3 * 3, 3):
    acc += x[i, k] * w[k, j]
    acc += x[i, k + 1] * w[k + 1, j]
    acc += x[i, k + 2] * w[k + 2, j]
for k in range(K // 3 * 3, K):
    acc += x[i, k] * w[k, j]
'''),
    "first_term_stored": '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            y[i, j] = x[i, 0] * w[0, j]
            for k in range(1, K):
                y[i, j] += x[i, k] * w[k, j]
            y[i, j] = relu(y[i, j] + b[j])
    return y
''',
    "register_blocked_in_j": '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(0, N, 2):
            a0 = 0.0
            a1 = 0.0
            for k in range(K):
                a0 += x[i, k] * w[k, j]
                a1 += x[i, k] * w[k, j + 1]
            y[i, j] = relu(a0 + b[j])
            y[i, j + 1] = relu(a1 + b[j + 1])
    return y
''',
    "epilogue_unrolled_in_j": '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    t = x @ w
    y = empty((M, N))
    for i in range(M):
        for j in range(0, N, 2):
            y[i, j] = relu(t[i, j] + b[j])
            y[i, j + 1] = relu(t[i, j + 1] + b[j + 1])
    return y
''',
}

AS_WRITTEN = {
    "register_blocked_with_a_scalar_read_after": '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        a1 = 0.0
        for j in range(0, N, 2):
            a0 = 0.0
            a1 = 0.0
            for k in range(K):
                a0 += x[i, k] * w[k, j]
                a1 += x[i, k] * w[k, j + 1]
            y[i, j] = relu(a0 + b[j])
            y[i, j + 1] = relu(a1 + b[j + 1])
        y[i, 0] = a1
    return y
''',
    "register_blocked_carrying_a_sum_across_j": '''
@program
def p(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        a1 = 0.0
        for j in range(0, N, 2):
            a0 = 0.0
            for k in range(K):
                a0 += x[i, k] * w[k, j]
                a1 += x[i, k] * w[k, j + 1]
            y[i, j] = relu(a0 + b[j])
            y[i, j + 1] = relu(a1 + b[j + 1])
    return y
''',
    "a_gap_between_ranges": _matmul('''
acc = 0.0
for k in range(K // 2 - 1):
    acc += x[i, k] * w[k, j]
for k in range(K // 2, K):
    acc += x[i, k] * w[k, j]
'''),
    "overlapping_ranges": _matmul('''
acc = 0.0
for k in range(K // 2 + 1):
    acc += x[i, k] * w[k, j]
for k in range(K // 2, K):
    acc += x[i, k] * w[k, j]
'''),
    "copies_not_consecutive": _matmul('''
acc = 0.0
for k in range(0, K, 2):
    acc += x[i, k] * w[k, j]
    acc += x[i, k] * w[k, j]
'''),
    "terms_not_consecutive": _matmul('''
acc = 0.0
for k in range(0, K, 2):
    acc += x[i, k] * w[k, j] + x[i, k] * w[k, j]
'''),
    "terms_reading_the_accumulator": _matmul('''
acc = 0.0
for k in range(0, K, 2):
    acc += x[i, k] * w[k, j] + acc * 0.5 * x[i, k + 1] * w[k + 1, j]
'''),
    "a_start_that_is_not_the_first_term": _matmul('''
acc = x[i, 1] * w[1, j]
for k in range(1, K):
    acc += x[i, k] * w[k, j]
'''),
    "a_term_reading_the_accumulator": _matmul('''
acc = x[i, 0] * w[0, j] * 0.5
for k in range(1, K):
    acc += x[i, k] * w[k, j] * 0.5
acc = acc * 0.1
s = x[i, 0] * acc
for k in range(1, K):
    s += x[i, k] * acc
acc = acc + s
'''),
}

DIMS = {"M": 6, "K": 8, "N": 4}


def _check(tmp_program, src: str, target: str):
    prog = tmp_program(src)
    args = random_args(prog, DIMS, seed=3)
    want = eqsat.reference(prog, *args)
    plan = eqsat.optimize(prog, DIMS, target=target)
    for backend in ("numpy", "triton"):
        assert rel_err(plan.run(*args, backend=backend), want) < 1e-5, (backend, plan)
    return plan


@pytest.mark.parametrize("target", ["h100", "cpu"])
@pytest.mark.parametrize("name", sorted(ONE_LOOP))
def test_loops_in_pieces_are_one_matmul(tmp_program, name, target):
    plan = _check(tmp_program, ONE_LOOP[name], target)
    if target == "h100":
        assert [(k.kind, sorted(k.epilogue)) for k in plan.kernels] == [("matmul", ["add", "relu"])], plan


@pytest.mark.parametrize("name", sorted(AS_WRITTEN))
def test_pieces_that_are_not_one_loop_stay_as_written(tmp_program, name):
    plan = _check(tmp_program, AS_WRITTEN[name], "h100")
    assert "matmul" not in [k.kind for k in plan.kernels] or len(plan.kernels) > 1, plan


# the first term as the start of a sum written in another nest, or as a scalar's start
# (`eqsat/peel.py`, on the terms: the start may be an earlier nest's tensor)
STARTED_ELSEWHERE = {
    "first_term_nest": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = w[0, j] * x[i, 0]
    for i in range(M):
        for j in range(N):
            for k in range(1, K):
                c[i, j] += x[i, k] * w[k, j]
    return c
''', True),
    "first_term_vector": ('''
@program
def p(x: f32["M", "K"], v: f32["K"]) -> f32["M"]:
    y = empty((M,))
    for i in range(M):
        s = x[i, 0] * v[0]
        for k in range(1, K):
            s += x[i, k] * v[k]
        y[i] = s
    return y
''', True),
    # not the first term: another column, a scaled one, the term before a later start
    "another_column": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = x[i, 1] * w[0, j]
    for i in range(M):
        for j in range(N):
            for k in range(1, K):
                c[i, j] += x[i, k] * w[k, j]
    return c
''', False),
    "scaled_first_term": ('''
@program
def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = x[i, 0] * w[0, j] * 2.0
    for i in range(M):
        for j in range(N):
            for k in range(1, K):
                c[i, j] += x[i, k] * w[k, j]
    return c
''', False),
}


@pytest.mark.parametrize("name", sorted(STARTED_ELSEWHERE))
def test_a_sum_started_at_its_first_term_elsewhere(tmp_program, name):
    src, one = STARTED_ELSEWHERE[name]
    plan = _check(tmp_program, src, "h100")
    assert ([k.kind for k in plan.kernels] == ["matmul"]) == one, plan
