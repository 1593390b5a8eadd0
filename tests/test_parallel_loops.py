"""Kept nests run their dependence-free loops in parallel (numba's prange), only those,
only where a parallel region pays, and the results agree with `reference`."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import eqsat
from conftest import random_args, rel_err
from eqsat.parallel import MIN_OPS, parallel_loops

# a Jacobi sweep pair inside a time loop: the time loop carries everything, each sweep's
# rows are independent
JACOBI = '''
@program
def p(T: int, A: f32["N", "N"], B: f32["N", "N"]) -> f32["N", "N"]:
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])
    return A
'''

# Gauss-Seidel: updated in place, every point reads its updated neighbours
SEIDEL = '''
@program
def p(T: int, A: f32["N", "N"]) -> f32["N", "N"]:
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i - 1, j] + A[i, j - 1] + A[i, j] + A[i, j + 1] + A[i + 1, j]) / 5.0
    return A
'''

# each row keeps a running scalar: the scalar is one location written by every row
SCALAR = '''
@program
def p(T: int, A: f32["N", "N"], B: f32["N", "N"]) -> f32["N", "N"]:
    for t in range(T):
        for i in range(N):
            s = 0.0
            for j in range(N):
                s = s * 0.5 + A[i, j]
                B[i, j] = s
        for i in range(N):
            for j in range(N):
                A[i, j] = (B[i, j] * 0.5 + 1.0) * (B[i, j] - 0.25)
    return A
'''

# a row reads the row above it, written in the same sweep
CARRIED = '''
@program
def p(T: int, A: f32["N", "N"]) -> f32["N", "N"]:
    for t in range(T):
        for i in range(1, N):
            for j in range(N):
                A[i, j] = A[i - 1, j] * 0.5 + A[i, j]
    return A
'''

# (more steps than eqsat/unroll.py unrolls: the time loop stays one nest, its sweeps inside)
BIG = {"N": 256, "T": 20}
RUN = {"N": 256, "T": 2}  # (to run: SCALAR's values overflow over 20 steps)


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _nest_loops(tmp_program, src, shapes):
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, shapes, target="cpu")
    loops = [k for k in plan.kernels if k.kind == "loop"]
    assert loops, plan.kernels
    out = []
    for nest in plan.lowered.nests.values():
        out += [f.target.id for f in parallel_loops(nest.stmt, plan.dims, plan.lowered.tensor_shapes, nest.views)]
    return prog, plan, out


def test_a_stencils_sweeps_are_parallel_and_its_time_loop_is_not(tmp_program):
    _, _, loops = _nest_loops(tmp_program, JACOBI, BIG)
    assert loops == ["i", "i"], loops


@pytest.mark.parametrize("src", [SEIDEL, SCALAR, CARRIED], ids=["seidel", "scalar", "carried"])
def test_loops_with_a_dependence_between_iterations_stay_sequential(tmp_program, src):
    _, _, loops = _nest_loops(tmp_program, src, BIG)
    # SCALAR's second sweep has no scalar and no carried dependence: it alone may run in parallel
    assert loops == (["i"] if src is SCALAR else []), loops


def test_small_sweeps_stay_sequential(tmp_program):
    """A sweep of 14 x 14 points is far under MIN_OPS: a parallel region would cost more."""
    _, _, loops = _nest_loops(tmp_program, JACOBI, {"N": 16, "T": 3})
    assert loops == []
    assert 14 * 14 * 10 < MIN_OPS


@pytest.mark.parametrize("src", [JACOBI, SCALAR], ids=["jacobi", "scalar"])
def test_parallel_nests_agree_with_reference_from_several_threads(tmp_program, monkeypatch, src):
    """Compiled with prange, run from four threads at once (numba's thread pool is entered
    by one at a time), and the results equal the program as written."""
    from eqsat.backends import loops

    class Counting:  # numba's lock, counting how often a parallel nest was entered
        def __init__(self):
            self.lock, self.entered, self.inside, self.most = threading.Lock(), 0, 0, 0

        def __enter__(self):
            self.lock.acquire()
            self.entered += 1
            self.inside += 1
            self.most = max(self.most, self.inside)

        def __exit__(self, *exc):
            self.inside -= 1
            self.lock.release()

    counting = Counting()
    monkeypatch.setattr(loops, "_PARALLEL_LOCK", counting)
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(src)
    plan = eqsat.optimize(prog, RUN, target="cpu")
    args = random_args(prog, RUN, 3)
    want = eqsat.reference(prog, *_copies(args))
    got = plan.run(*_copies(args))
    assert rel_err(got, want) < 1e-5
    assert any("parallel loops: i" in how for _, how in plan.loop_runners.values()), plan.loop_runners
    errors = []

    def worker():
        try:
            for _ in range(3):
                if not rel_err(plan.run(*_copies(args)), want) < 1e-5:
                    errors.append("wrong result")
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert counting.entered >= 13 and counting.most == 1, (counting.entered, counting.most)


def test_the_switch_compiles_every_nest_sequentially(tmp_program, monkeypatch):
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    monkeypatch.setenv("EQSAT_PARALLEL_LOOPS", "0")
    prog = tmp_program(JACOBI)
    plan = eqsat.optimize(prog, BIG, target="cpu")
    args = random_args(prog, BIG, 4)
    assert rel_err(plan.run(*_copies(args)), eqsat.reference(prog, *_copies(args))) < 1e-5
    assert all(how == "compiled (numba)" for _, how in plan.loop_runners.values()), plan.loop_runners
    assert np.all(np.isfinite(plan.run(*args)))


def test_the_cost_model_spreads_parallel_loops_over_the_cores(tmp_program, monkeypatch):
    """A kept nest is charged its sequential chain, except the work inside its parallel
    loops, which the CPU target's two cores share (cost.loop_terms)."""
    prog = tmp_program(JACOBI)
    par = eqsat.optimize(prog, BIG, target="cpu")
    work = next(iter(par.lowered.nests.values())).work
    assert 0.9 * work["ops"] < work["parallel_ops"] <= work["ops"], work
    monkeypatch.setenv("EQSAT_PARALLEL_LOOPS", "0")
    seq = eqsat.optimize(prog, BIG, target="cpu")
    assert next(iter(seq.lowered.nests.values())).work["parallel_ops"] == 0
    assert 0.45 < par.cost / seq.cost < 0.6, (par.cost, seq.cost)


# found by a campaign with MIN_OPS at 0: one iteration of `i`, so no two iterations
# conflict, but numba would privatize `s` (a product reduction starting at 1)
ONE_ROW = '''
@program
def p(x: f32["M", "K"]) -> f32["M"]:
    y = empty((M,))
    s = 0.0
    for i in range(M):
        for k in range(K):
            s = s * 0.5
        y[i] = s * 2.0
    return y
'''


def test_a_loop_assigning_a_name_is_never_parallel(tmp_program, monkeypatch):
    from eqsat import parallel

    monkeypatch.setattr(parallel, "MIN_OPS", 0)
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(ONE_ROW)
    shapes = {"M": 1, "K": 5}
    plan = eqsat.optimize(prog, shapes, target="cpu")
    for nest in plan.lowered.nests.values():
        assert parallel_loops(nest.stmt, plan.dims, plan.lowered.tensor_shapes, nest.views) == []
    args = random_args(prog, shapes, 2)
    assert rel_err(plan.run(*_copies(args)), eqsat.reference(prog, *_copies(args))) < 1e-6


# (32: since a store at a fixed index made total is one instance for the dataflow, more of
# the generator's nests are lifted, and 24 programs kept only 2 with a parallel loop)
CAMPAIGN = int(os.environ.get("EQSAT_PARALLEL_CAMPAIGN", "32"))


def test_generated_programs_agree_with_every_provable_loop_parallel(monkeypatch, tmp_path):
    """The analysis's soundness campaign: with the size threshold off, every loop it proves
    parallel runs as prange (compiled), on the dataflow generator's programs (all eight
    families, seeded), and every plan agrees with `reference`.
    `EQSAT_PARALLEL_CAMPAIGN=800 pytest tests/test_parallel_loops.py -k generated` is the
    longer run (800 programs, 159 with parallel loops, 0 mismatches when it was written)."""
    import warnings

    from eqsat import parallel
    from gen_dataflow import FAMILIES, generate_seeded, load
    from test_dataflow_diff import _close

    monkeypatch.setattr(parallel, "MIN_OPS", 0)
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    families = list(FAMILIES)
    bad, with_parallel = [], 0
    for seed in range(CAMPAIGN):
        gp = generate_seeded(seed, families[seed % len(families)])
        prog = load(gp, str(tmp_path))
        args = random_args(prog, gp.shapes, seed)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = eqsat.reference(prog, *_copies(args))
            plan = eqsat.optimize(prog, gp.shapes, limits=eqsat.Limits(seconds=5))
            got = plan.run(*_copies(args))
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        if not all(np.all(np.isfinite(np.asarray(w, dtype=np.float64))) for w in want):
            continue  # (the generator's own overflow: nothing to compare)
        with_parallel += any("parallel" in how for _, how in (plan.loop_runners or {}).values())
        if len(got) != len(want) or not all(_close(g, w)[0] for g, w in zip(got, want)):
            bad.append(str(gp))
            continue
        # the compiled nests are called straight from the plan's code, handed the buffers
        # only they read: a second call on the same arrays leaves them as they were and
        # gives the same results
        mine = _copies(args)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            again = plan.run(*mine)
        again = again if isinstance(again, tuple) else (again,)
        if not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(mine, _copies(args))) or \
                not all(np.array_equal(g, a, equal_nan=True) for g, a in zip(got, again)):
            bad.append("second call differs or wrote its arguments:\n" + str(gp))
    assert not bad, "\n\n".join(bad)
    assert with_parallel >= CAMPAIGN // 8, with_parallel


# each row runs its own recurrence, restarted at the row's start (deriche's shape): the row
# loop is parallel with `ym1` private to each row, unless the program reads it afterwards
ROWS = '''
@program
def p(x: f32["N", "N"]) -> f32["N", "N"]:
    y = empty((N, N))
    for i in range(N):
        ym1 = 0.0
        for j in range(N):
            y[i, j] = x[i, j] + 0.5 * ym1
            ym1 = y[i, j]
    return y
'''

ROWS_LIVE = ROWS.replace('-> f32["N", "N"]:', '-> tuple[f32["N", "N"], f32]:').replace("return y", "return y, ym1")

# the row reads the value the previous row left before setting its own
ROWS_CARRIED = ROWS.replace("        ym1 = 0.0\n", "        y[i, 0] = ym1\n        ym1 = 0.0\n").replace(
    "    for i in range(N):", "    ym1 = 1.0\n    for i in range(N):")


# per-row scalars set before an inner loop (a batchnorm's scale and shift): numba refused
# to return them from the parallel loop, and the nest ran interpreted (1500x numba's time)
ROW_SCALARS = '''
@program
def p(x: f32["N", "N"], mean: f32["N"], var: f32["N"], gamma: f32["N"], beta: f32["N"]) -> f32["N", "N"]:
    y = empty((N, N))
    for c in range(N):
        scale = gamma[c] / sqrt(var[c] * var[c] + 1e-5)
        shift = beta[c] - mean[c] * scale
        for q in range(N):
            y[c, q] = x[c, q] * scale + shift
    return y
'''


@pytest.mark.parametrize("src, want", [(ROWS, ["i"]), (ROWS_LIVE, []), (ROWS_CARRIED, []), (ROW_SCALARS, ["c"])],
                         ids=["private", "read-after", "read-before", "row-scalars"])
def test_names_assigned_in_a_parallel_loop_must_be_private(tmp_program, monkeypatch, src, want):
    """A name set at the start of each iteration and read nowhere else is private to the
    iteration (numba keeps one per thread): the loop stays parallel. Read after the nest,
    or read in an iteration before it is set, it keeps the loop sequential."""
    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    prog = tmp_program(src)
    shapes = {"N": 512}
    plan = eqsat.optimize(prog, shapes, target="cpu")
    args = random_args(prog, shapes, 5)
    got, ref = plan.run(*_copies(args)), eqsat.reference(prog, *_copies(args))
    got, ref = (got if isinstance(got, tuple) else (got,)), (ref if isinstance(ref, tuple) else (ref,))
    assert all(rel_err(g, r) < 1e-5 for g, r in zip(got, ref))
    hows = [how for _, how in plan.loop_runners.values()]
    par = [how.split("parallel loops: ")[1].rstrip(")").split(", ") for how in hows if "parallel" in how]
    assert (par[0] if par else []) == want, hows
    # the cost model agrees with the backend: the lowering knows what is read after the
    # nest, so the private row loop's work is modeled as shared by the cores
    work = next(iter(plan.lowered.nests.values())).work
    assert (work["parallel_ops"] > 0.9 * work["ops"]) == bool(want), work


def test_a_parallel_function_falls_back_to_one_thread_where_that_runs_faster():
    """`loops._Threads`: a compiled function with parallel loops runs on numba's threads or
    on one, whichever ran it faster lately, and tries the other every EXPLORE calls (on
    a machine whose cores are busy, a parallel region waited for its workers: 8 ms against
    0.3 ms on one thread). Here a stand-in that is slow on several threads and then, as if
    the load went away, fast on them."""
    import time

    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    slow_parallel = [True]
    seen = []

    def fn():
        n = numba.get_num_threads()
        seen.append(n)
        time.sleep(0.004 if (n > 1) == slow_parallel[0] else 0.0005)
        return n

    from eqsat.backends import loops

    call = loops._one_at_a_time(fn)
    for _ in range(40):
        call()
    assert numba.get_num_threads() > 1  # restored after each call
    late = seen[8:]
    assert sum(n == 1 for n in late) >= len(late) - 4, seen  # one thread, but for the tries
    assert any(n > 1 for n in late), seen  # the parallel form is still tried now and then
    slow_parallel[0] = False
    seen.clear()
    for _ in range(64):
        call()
    assert sum(n > 1 for n in seen[-16:]) >= 14, seen  # back on every thread


# a loop over heads whose body stretches m's axis of extent 1 over the scores' rows (`s - m[h]`);
# arctan2 has no term, so the nest is kept, compiled
HEADS = '''
@program
def p(q: f32["H", "S", "D"], k: f32["H", "S", "D"], m: f32["H", "S", 1], v: f32["H", "S", "D"]) -> f32["H", "S", "D"]:
    o = empty((H, S, D))
    for h in range(H):
        s = q[h] @ k[h].T
        o[h] = np.arctan2(s - m[h], s * s + 1.0) @ v[h]
    return o
'''


def test_a_nest_with_arithmetic_of_two_arrays_is_compiled_without_parallel_loops(tmp_program, monkeypatch):
    """numba's parallel mode makes `s - m[h]` (of shapes (S, S) and (S, 1)) a parallel loop
    that assumes equal extents: it read past m and returned wrong values, or failed an
    assertion ("Sizes of s, m do not match"; a softmax's keepdims max in a loop over 24
    heads, by a probe). The heads loop is parallel by its dependences (MIN_OPS lowered so
    that these sizes pass it); the nest is compiled sequentially and agrees with the
    program as written."""
    from eqsat import parallel
    from eqsat.backends.loops import live_outputs

    monkeypatch.setenv("EQSAT_COMPILE_LOOPS", "always")
    monkeypatch.setattr(parallel, "MIN_OPS", 0)
    prog = tmp_program("import numpy as np\n" + HEADS)
    dims = {"H": 20, "S": 32, "D": 16}
    plan = eqsat.optimize(prog, dims, target="cpu")
    args = random_args(prog, dims, 5)
    assert rel_err(plan.run(*_copies(args)), eqsat.reference(prog, *_copies(args))) < 1e-5
    nest = plan.lowered.nests[next(k.nest for k in plan.kernels if k.kind == "loop")]
    assert parallel_loops(nest.stmt, plan.dims, plan.lowered.tensor_shapes, nest.views, live_outputs(plan, nest)), \
        "the heads loop is parallel by its dependences"
    assert [how for _, how in plan.loop_runners.values()] == ["compiled (numba)"], plan.loop_runners
