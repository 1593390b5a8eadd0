"""Issue 7: the matmul (and its epilogue) is found however the loops were written: explicit
accumulation, initialization by loops, in-place epilogue loops, constants anywhere in the
product, split loops (either order of the split variables, several axes), multi-axis
contractions in any layout, prologues written as loops, epilogues read through a
transpose. Each goal case must become
exactly the expected kernels; each guard (a near miss) must not become a matmul. All run
against `reference`."""
from __future__ import annotations

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err

D = {"N": 4, "M": 3, "K": 6, "L": 2}

GOALS = {
    "explicit_acc": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                c[i, j] = c[i, j] + a[i, k] * b[k, j]
    return c
''',
    "acc_temp_minus": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                p = a[i, k] * b[k, j]
                c[i, j] = c[i, j] - p
    return c
''',
    "init_loop": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = 0.0
    for i in range(M):
        for j in range(N):
            for k in range(K):
                c[i, j] += a[i, k] * b[k, j]
    for i in range(M):
        for j in range(N):
            c[i, j] = relu(c[i, j])
    return c
''',
    "init_inside": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"], bias: f32["N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = bias[j]
            for k in range(K):
                c[i, j] += a[i, k] * b[k, j]
    return c
''',
    "init_residual": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"], res: f32["M", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            c[i, j] = res[i, j]
    for i in range(M):
        for j in range(N):
            for k in range(K):
                c[i, j] += a[i, k] * b[k, j]
    return c
''',
    "const_factor": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += a[i, k] * (b[k, j] * 0.5)
            c[i, j] = s
    return c
''',
    "const_front": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s = s - (2.0 * a[i, k]) * b[k, j]
            c[i, j] = s
    return c
''',
    "split_col": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j0 in range(N // 2):
            for j1 in range(2):
                s = 0.0
                for k in range(K):
                    s += a[i, k] * b[k, j0 * 2 + j1]
                c[i, j0 * 2 + j1] = relu(s)
    return c
''',
    "split_red": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k0 in range(K // 2):
                for k1 in range(2):
                    s += a[i, k0 * 2 + k1] * b[k0 * 2 + k1, j]
            c[i, j] = s
    return c
''',
    "multi_axis": '''
@program
def p(a: f32["M", "K", "L"], b: f32["N", "K", "L"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                for l in range(L):
                    s += a[i, k, l] * b[j, k, l]
            c[i, j] = s
    return c
''',
    # the Gram form: one tensor as both operands
    "gram": '''
@program
def p(a: f32["M", "K"]) -> f32["M", "M"]:
    c = empty((M, M))
    for i in range(M):
        for j in range(M):
            s = 0.0
            for k in range(K):
                s += a[i, k] * a[j, k]
            c[i, j] = relu(s)
    return c
''',
    # batched, k outermost, own weights per batch, a scaled operand
    "batched_k_outer": '''
@program
def p(a: f32["L", "M", "K"], w: f32["L", "K", "N"], alpha: f32) -> f32["L", "M", "N"]:
    c = zeros((L, M, N))
    for k in range(K):
        for q in range(L):
            for i in range(M):
                for j in range(N):
                    c[q, i, j] += a[q, i, k] * (alpha * w[q, k, j])
    return c
''',
    # a layer of library calls, then a layer of loops: each its own fused matmul
    "library_then_loops": '''
@program
def p(x: f32["M", "K"], w1: f32["K", "N"], w2: f32["N", "L"]) -> f32["M", "L"]:
    h = relu(x @ w1)
    c = empty((M, L))
    for i in range(M):
        for j in range(L):
            s = 0.0
            for k in range(N):
                s += h[i, k] * w2[k, j]
            c[i, j] = tanh(s)
    return c
''',
    # the split pair in the other order (j1 outer): merged once isl proves the reorder
    "two_products": '''
@program
def p(a: f32["M", "K"], b: f32["M", "K"]) -> f32["M", "M"]:
    c = empty((M, M))
    for i in range(M):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += a[i, k] * b[j, k] - 2.0 * b[i, k] * a[j, k]
            c[i, j] = acc
    return c
''',
    "prologue_broadcast": '''
@program
def p(a: f32["M", "K"], s: f32["K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += relu(a[i, k] * s[k]) * b[k, j]
            c[i, j] = acc
    return c
''',
    "split_col_rev": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j1 in range(2):
            for j0 in range(N // 2):
                s = 0.0
                for k in range(K):
                    s += a[i, k] * b[k, j0 * 2 + j1]
                c[i, j0 * 2 + j1] = relu(s)
    return c
''',
    # two axes split, the tile loops not adjacent to their pairs
    "split_tiles": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for j0 in range(N // 2):
        for k0 in range(K // 3):
            for i in range(M):
                for j1 in range(2):
                    for k1 in range(3):
                        c[i, j0 * 2 + j1] += a[i, k0 * 3 + k1] * b[k0 * 3 + k1, j0 * 2 + j1]
    return c
''',
    # an activation on an operand inside the reduction: a fused prologue
    "prologue_inner": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += relu(a[i, k]) * b[k, j]
            c[i, j] = s
    return c
''',
    # a prologue written as its own loop, on the right operand, stored transposed
    "prologue_loop": '''
@program
def p(a: f32["M", "K"], b: f32["N", "K"], alpha: f32) -> f32["M", "N"]:
    bp = empty((N, K))
    for j in range(N):
        for k in range(K):
            bp[j, k] = sigmoid(b[j, k]) * alpha
    c = zeros((M, N))
    for i in range(M):
        for k in range(K):
            for j in range(N):
                c[i, j] += a[i, k] * bp[j, k]
    return c
''',
    # a symmetric operand read from one triangle (BLAS symm): the select reads the tensor at
    # the operand's variables and at them swapped (its transpose): a prologue
    "prologue_symmetric": '''
@program
def p(b: f32["M", "K"], a: f32["K", "K"]) -> f32["M", "K"]:
    c = empty((M, K))
    for i in range(M):
        for j in range(K):
            acc = 0.0
            for k in range(K):
                s = a[k, j] if k >= j else a[j, k]
                acc += b[i, k] * s
            c[i, j] = acc
    return c
''',
    # the epilogue reads the product through a transpose
    "epilogue_transposed": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    return relu(transpose(b.T @ a.T))
''',
}

PROLOGUE = {"prologue_inner": ["relu"], "prologue_loop": ["sigmoid"], "prologue_broadcast": ["relu", "mul"],
            "prologue_symmetric": ["select"]}

EXPECT = {'explicit_acc': [('matmul', [])], 'acc_temp_minus': [('matmul', ['neg'])], 'init_loop': [('matmul', ['relu'])], 'init_inside': [('matmul', ['add'])], 'init_residual': [('matmul', ['add'])], 'const_factor': [('matmul', ['mul'])], 'const_front': [('matmul', ['neg', 'mul'])], 'split_col': [('matmul', ['relu'])], 'split_red': [('matmul', [])], 'multi_axis': [('matmul', [])],
          'split_col_rev': [('matmul', ['relu'])], 'split_tiles': [('matmul', [])],
          'prologue_inner': [('matmul', [])], 'prologue_loop': [('matmul', [])],
          'prologue_symmetric': [('matmul', [])],
          'epilogue_transposed': [('matmul', ['relu'])],
          'gram': [('matmul', ['relu'])], 'batched_k_outer': [('matmul', ['mul'])],
          'library_then_loops': [('matmul', ['relu']), ('matmul', ['tanh'])],
          # a sum of two products: at these sizes one reduction kernel (a tree over k) costs
          # less than any form with a matmul; at 256, two matmuls
          # (test_two_products_are_two_matmuls_where_they_pay)
          'two_products': [('reduction', [])],
          # an operand scaled by a vector along the reduction (a column scale): a prologue
          'prologue_broadcast': [('matmul', [])]}

GUARDS = {
    # one triangle and the diagonal: a[j, j] is no element of a or of its transpose at (k, j)
    "triangle_and_diagonal": '''
@program
def p(b: f32["M", "K"], a: f32["K", "K"]) -> f32["M", "K"]:
    c = empty((M, K))
    for i in range(M):
        for j in range(K):
            acc = 0.0
            for k in range(K):
                s = a[k, j] if k >= j else a[j, j]
                acc += b[i, k] * s
            c[i, j] = acc
    return c
''',
    # a diagonal operand is no matmul
    "diagonal": '''
@program
def p(a: f32["M", "K"], b: f32["K", "K"]) -> f32["M", "K"]:
    c = zeros((M, K))
    for i in range(M):
        for j in range(K):
            for k in range(K):
                c[i, j] += a[i, k] * b[k, k]
    return c
''',
    # the init is read back after the sum started: a recurrence, not an accumulation into zero
    "reads_partial_sum": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(K):
                c[i, j] = c[i, j] * 0.5 + a[i, k] * b[k, j]
    return c
''',
    # max-plus: a max of sums is no multiply-add
    "max_plus": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = -1000.0
            for k in range(K):
                s = max(s, a[i, k] + b[k, j])
            c[i, j] = s
    return c
''',
    # a row's own squares summed: one tensor twice at the same index is no Gram product
    "row_norms": '''
@program
def p(a: f32["M", "K"]) -> f32["M", "M"]:
    c = empty((M, M))
    for i in range(M):
        for j in range(M):
            s = 0.0
            for k in range(K):
                s += a[i, k] * a[i, k]
            c[i, j] = s
    return c
''',
    # the batch index used again inside an operand: no batched matmul
    "batch_diagonal": '''
@program
def p(a: f32["M", "M", "K"], w: f32["M", "K", "M"]) -> f32["M", "M"]:
    c = zeros((M, M))
    for q in range(M):
        for i in range(M):
            for k in range(K):
                c[q, i] += a[q, i, k] * w[q, k, q]
    return c
''',
    # a function of the whole product is no prologue
    "fn_of_product": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += relu(a[i, k] * b[k, j])
            c[i, j] = s
    return c
''',
    # a split pair in the other order whose iterations read each other's results: the
    # reorder is refused (merged, the neighbour column would be read at another time)
    "split_rev_carried": '''
@program
def p(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    c = zeros((M, N))
    for i in range(M):
        for j1 in range(2):
            for j0 in range(N // 2):
                s = 0.0
                for k in range(K):
                    s += a[i, k] * b[k, j0 * 2 + j1]
                c[i, j0 * 2 + j1] = s + c[i, (j0 * 2 + j1 + 1) % N]
    return c
''',
}


def _run(tmp_program, src, dims=D):
    prog = tmp_program(src)
    args = random_args(prog, dims, seed=4)
    plan = eqsat.optimize(prog, dims)
    want = eqsat.reference(prog, *args)
    assert rel_err(plan.run(*args), want) < 1e-5, plan
    if any(k.prologue for k in plan.kernels):  # prologues are generated code on Triton: run it too
        assert rel_err(plan.run(*args, backend="triton"), want) < 1e-5, plan
    return plan


def test_two_products_are_two_matmuls_where_they_pay(tmp_program):
    """a @ b.T - 2 * (b @ a.T) at 256: two matmul kernels, the second subtracting in its
    epilogue (checked against numpy: the loops as written are too slow to interpret)."""
    dims = {"M": 256, "K": 256}
    plan = eqsat.optimize(tmp_program(GOALS["two_products"]), dims)
    assert [(k.kind, sorted(k.epilogue)) for k in plan.kernels] == [("matmul", []), ("matmul", ["mul", "sub"])], plan
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((256, 256), dtype=np.float32) for _ in range(2))
    want = a.astype(np.float64) @ b.T - 2.0 * (b.astype(np.float64) @ a.T)
    assert rel_err(plan.run(a, b), want) < 1e-5, plan


@pytest.mark.parametrize("name", sorted(GOALS))
def test_form_is_found(tmp_program, name):
    plan = _run(tmp_program, GOALS[name])
    assert [(k.kind, sorted(k.epilogue)) for k in plan.kernels] == [(k, sorted(e)) for k, e in EXPECT[name]], plan
    pro = {o for k in plan.kernels for o in k.prologue}
    assert set(PROLOGUE.get(name, [])) <= pro and (pro or not PROLOGUE.get(name)), plan
    if name not in PROLOGUE:
        assert not pro, plan


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_near_miss_is_no_matmul(tmp_program, name):
    plan = _run(tmp_program, GUARDS[name])
    assert all(k.kind != "matmul" for k in plan.kernels), plan


def test_prologue_is_fused_on_a_gpu_and_shared_on_the_cpu():
    """gemver's updated A feeds two matrix-vector products. On a GPU target it is never
    stored (evaluated inside each product's kernel); on the CPU target numpy would compute
    an operand as a whole tensor anyway, so it is one pointwise kernel that both products
    read (paid once), not computed twice as a prologue."""
    import test_polybench as tp

    mod, prog = tp.load("gemver")
    gpu = eqsat.optimize(prog, mod.MEDIUM, target="h100")  # N = 400: big enough for matmuls
    cpu = eqsat.optimize(prog, mod.MEDIUM, target="cpu")

    def updates(plan):  # kernels computing an N x N tensor elementwise
        return [k for k in plan.kernels if k.kind == "pointwise" and len(eqsat.terms.unlist(k.term.args[0])) == 2]

    assert not updates(gpu), gpu
    assert len(updates(cpu)) == 1 and not any(k.prologue for k in cpu.kernels), cpu
    assert sum(k.kind == "matmul" for k in cpu.kernels) == 2, cpu
    args = random_args(prog, mod.MEDIUM, 1)
    for plan in (gpu, cpu):
        assert rel_err(plan.run(*args), mod.truth(*args)) < 1e-4


@pytest.mark.parametrize("operand", ["W[1, k, j]", "w[k, j]", "V[k, 1, j]"])
def test_one_layer_of_stacked_weights_is_a_matmul_operand(tmp_program, operand):
    """A loop matmul reading one layer of a 3-D tensor (`W[1, k, j]`, or `w = W[1]`) was a
    reduction kernel (a probe's, session 27: 100-400 layer loop chains over `W[l]` never
    became matmuls): a constant leading index of a closed tensor is a view of it
    (`rules/matmul.py`), whose layer the matmul pattern names."""
    prog = tmp_program(f'''
@program
def p(x: f32["M", "N"], W: f32["L", "N", "N"], V: f32["N", "L", "N"]) -> f32["M", "N"]:
    w = W[1]
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(N):
                acc += x[i, k] * {operand}
            y[i, j] = relu(acc)
    return y
''')
    rng = np.random.default_rng(0)
    x, W, V = (rng.standard_normal(s).astype(np.float32) for s in ((16, 24), (3, 24, 24), (24, 3, 24)))
    plan = eqsat.optimize(prog, {"M": 16, "N": 24, "L": 3})
    assert [k.kind for k in plan.kernels] == ["matmul"], plan
    want = eqsat.reference(prog, x, W, V)
    for backend in ("numpy", "triton"):
        np.testing.assert_allclose(plan.run(x, W, V, backend=backend), want, rtol=1e-5, atol=1e-5)
