"""optimize_many: one result per item, the same plans as one-by-one calls, an item's
error in its slot (issue 13)."""
from __future__ import annotations

import numpy as np

import eqsat
from eqsat import f32, program  # noqa: F401 - (read by a program's annotations)
from conftest import corpus_paths, load_case, random_args, rel_err


def test_optimize_many_matches_sequential_calls():
    cases = [load_case(p) for p in corpus_paths()]
    items = [(prog, mod.SHAPES) for mod, prog in cases]
    items.append((cases[0][1], {"nope": 3}))  # a bad item: its error comes back, the batch goes on
    items.append("not an item")  # a malformed one too
    items.append((_out_of_bounds(), {"N": 8}))  # a program refused by optimize(): a ProgramError
    out = eqsat.optimize_many(items, workers=2, progress=False)
    assert len(out) == len(items)
    assert isinstance(out[-3], eqsat.ArgumentError) and isinstance(out[-2], eqsat.ArgumentError)
    # (a ProgramError did not survive pickling back from its worker: the pool broke and every
    # slot held BrokenProcessPool, by a probe)
    assert isinstance(out[-1], eqsat.ProgramError) and "outside 0..7" in str(out[-1]) and out[-1].loc.line > 0
    for (mod, prog), plan in zip(cases, out):
        assert isinstance(plan, eqsat.Plan), plan
        alone = eqsat.optimize(prog, mod.SHAPES)
        assert [(k.kind, k.epilogue) for k in plan.kernels] == [(k.kind, k.epilogue) for k in alone.kernels]
        args = random_args(prog, mod.SHAPES, 7)
        assert rel_err(plan.run(*args), mod.truth(*args)) < 1e-4



def _out_of_bounds():
    import importlib.util
    import pathlib
    import tempfile

    path = pathlib.Path(tempfile.mkdtemp()) / "shifted.py"
    path.write_text("from eqsat import *\n\n@program\ndef shifted(x: f32['N']) -> f32['N']:\n    y = empty((N,))\n"
                    "    for i in range(N):\n        y[i] = x[i - 1] + x[i]\n    return y\n")
    spec = importlib.util.spec_from_file_location("shifted_prog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.shifted


def test_a_program_error_survives_pickling():
    import pickle

    from eqsat.errors import Loc

    e = pickle.loads(pickle.dumps(eqsat.ProgramError("bad", Loc("f.py", 3, 4))))
    assert isinstance(e, eqsat.ProgramError) and e.loc == Loc("f.py", 3, 4) and str(e) == "f.py:3:4: bad"


TIE = """
from eqsat import *

@program
def tie(a: f32["B", "K", "M"], b: f32["B", "N", "K"]):
    c = zeros((B, M, N))
    for j in range(N):
        for q in range(B):
            for i1 in range(3):
                for i0 in range(M // 3):
                    acc = 0.0
                    for k in range(K):
                        acc = a[q, k, i0 * 3 + i1] * b[q, j, k] + acc
                    c[q, i0 * 3 + i1, j] = acc
    return c
"""

CHOOSE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("tie", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
import numpy as np

import eqsat
print(eqsat.optimize(mod.tie, {"M": 3, "K": 5, "N": 1, "B": 1}, target="cpu").roots)
"""


def test_plans_do_not_depend_on_the_process(tmp_path):
    """optimize_many's worker processes must choose what the caller would. Python salts
    string hashes per process, so anything that follows a set's order (float prices summed
    over a set, the ILP's rows) can break an equal-cost tie one way in one process and the
    other way in the next: this program's two transposed operands did (a generated
    spelling, seed 100). On a tie the smaller plan wins: no transpose of a transpose."""
    import os
    import subprocess
    import sys

    path = tmp_path / "tie.py"
    path.write_text(TIE)
    seen = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = subprocess.run([sys.executable, "-c", CHOOSE, str(path)], capture_output=True, text=True,
                           env=env, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        seen.add(r.stdout.strip())
    assert len(seen) == 1, seen
    (roots,) = seen
    assert "matmul" in roots and "transpose(transpose(" not in roots, roots


def test_workers_must_be_a_positive_count():
    import pytest

    mod, prog = load_case(next(iter(corpus_paths())))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(eqsat.ArgumentError, match="workers"):
            eqsat.optimize_many([(prog, mod.SHAPES)], workers=bad)


def test_a_plan_from_the_pool_keeps_its_assumption_and_its_fallback():
    """A plan that assumes finite arguments came back from a worker without `assumes` and
    without its exact fallback (rebuilt from its terms alone): an infinity in an element the
    program never multiplies gave NaN (a probe). Rebuilt whole now, alternatives included."""
    from pathlib import Path

    mod, prog = load_case(Path(__file__).parent / "polybench" / "trmm.py")
    shapes = {"M": 24, "N": 30}
    alone = eqsat.optimize(prog, shapes, target="cpu", candidates=3)
    (plan,) = eqsat.optimize_many([(prog, shapes)], workers=1, target="cpu", candidates=3, progress=False)
    assert alone.assumes is not None and plan.assumes == alone.assumes
    assert plan.fallback is not None and plan.cost == alone.cost
    assert len(plan.alternatives) == len(alone.alternatives)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((24, 24)).astype(np.float32)
    b = rng.standard_normal((24, 30)).astype(np.float32)
    b[0, 3] = np.inf  # read only where the triangle's mask leaves it out
    want = eqsat.reference(prog, np.float32(1.5), a, b)
    got = plan.run(np.float32(1.5), a, b)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    assert np.allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)


def test_a_program_defined_inside_a_function_is_that_items_error(tmp_path):
    """A worker cannot load a program defined in a function: it was unpickled in the worker,
    which died, and every slot of the batch held BrokenProcessPool (a probe)."""
    @program
    def local(x: f32["N"]) -> f32["N"]:
        return x * 2.0

    good, _ = load_case(corpus_paths()[0])[::-1]
    out = eqsat.optimize_many([(local, {"N": 4}), (good, load_case(corpus_paths()[0])[0].SHAPES)],
                              workers=1, progress=False)
    assert isinstance(out[0], eqsat.ArgumentError) and "defined inside a function" in str(out[0])
    assert isinstance(out[1], eqsat.Plan)


def test_a_bad_executor_or_items_is_an_argument_error():
    for call in (lambda: eqsat.optimize_many([], executor="ray"), lambda: eqsat.optimize_many(None)):
        try:
            call()
        except eqsat.ArgumentError:
            continue
        raise AssertionError("expected ArgumentError")


def test_a_plan_lowered_out_of_time_is_rebuilt_from_the_same_lowering(tmp_path):
    """A probe's (2026-11-28): with the time limit reached in the lowering, a worker keeps the
    remaining top-level statements as written, grouped into one nest; the parent lowered the
    program again with only the kept nests' numbers, so without that grouping, and the
    worker's roots named another nest 0: 300 unrolled updates came back with a relative
    error of 1.0, attention over heads with a KeyError. The statement where the lowering
    ran out of time is replayed too, and nests that still differ are refused."""
    import importlib.util

    import pytest

    from eqsat import batch

    lines = "\n".join(f"    y[{i % 16}] = y[{i % 16}] + x[{(i * 7) % 16}] * {1 + i % 5}.0" for i in range(300))
    path = tmp_path / "updates.py"
    path.write_text(f"from eqsat import *\n\n@program\ndef upd(x: f32['M']) -> f32['M']:\n    y = zeros((M,))\n"
                    f"{lines}\n    return y\n")
    spec = importlib.util.spec_from_file_location("updates_prog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shapes = {"M": 16}
    plan = eqsat.optimize(mod.upd, shapes, limits=eqsat.Limits(seconds=0.05))
    if plan.lowered.out_of_time_from is None:
        pytest.skip("this machine lowered 300 statements within 0.05 s")
    data = batch._portable(plan)
    rebuilt = batch._rebuild(mod.upd, shapes, {}, data)
    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    assert rel_err(rebuilt.run(x), eqsat.reference(mod.upd, x)) < 1e-5
    data["nests"] = {k: (None, ("other",), 0) for k in data["nests"]}
    with pytest.raises(eqsat.EqsatError, match="differs from the worker's lowering"):
        batch._rebuild(mod.upd, shapes, {}, data)


MAIN_ONLY = """
import sys
import numpy as np
import eqsat
from eqsat import f32, program

sys.path.insert(0, {mods!r})
from twice import g


if __name__ == "__main__":
    @program
    def inner(x: f32["N"]) -> f32["N"]:
        return x * 2.0

    out = eqsat.optimize_many([(inner, {{"N": 3}}), (g, {{"N": 3}}), (g, {{"N": 4}})], workers=1, progress=False)
    print(type(out[0]).__name__, "|", out[0])
    x = np.arange(4, dtype=np.float32)
    print(type(out[1]).__name__, type(out[2]).__name__, out[2].run(x).tolist())
"""


def test_a_program_a_worker_cannot_find_is_that_items_error(tmp_path):
    """A program defined under `if __name__ == "__main__":` is not in a spawned worker's
    copy of the main module: loading it there failed while the worker unpickled its task,
    the worker died, and every slot held BrokenProcessPool (a probe, session 27). Programs
    travel as their module, name and file and are found inside the task, so that item's
    slot holds an ArgumentError saying so; and one bound under another name than its
    function's (`g = program(f)`) is found by its function's name."""
    import subprocess
    import sys

    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "twice.py").write_text("from eqsat import f32, program\n\n\ndef f(x: f32['N']) -> f32['N']:\n"
                                   "    return x * 3.0\n\n\ng = program(f)\n")
    script = tmp_path / "main_only.py"
    script.write_text(MAIN_ONLY.format(mods=str(mods)))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    first, second = r.stdout.strip().splitlines()[-2:]
    assert first.startswith("ArgumentError |") and "__main__" in first, first
    assert second == "Plan Plan [0.0, 3.0, 6.0, 9.0]", second


CONSTANTS_MAIN = """
import sys
import numpy as np
import eqsat

sys.path.insert(0, {mods!r})
import cmod


if __name__ == "__main__":
    cmod.SCALE = 5.0
    cmod.NB = 3
    x = np.arange(4, dtype=np.float32)
    out = eqsat.optimize_many([(cmod.scaled, {{"M": 4}}), (cmod.bounded, {{"M": 4}})], workers=1, progress=False)
    print(out[0].run(x).tolist(), out[1].run(x).tolist())
"""


def test_a_worker_reads_module_constants_as_the_caller_has_them(tmp_path):
    """A worker imports the program's module anew, where a constant the caller set since its
    import (`cmod.SCALE = 5.0`, a loop bound `cmod.NB = 3`) reads as the import set it:
    optimize_many's plans used those (x * 1.0 for x * 5.0, a probe's, session 27), where
    optimize() and reference read the value as it is now. The values travel with the
    program."""
    import subprocess
    import sys

    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "cmod.py").write_text(
        "from eqsat import *\nSCALE = 1.0\nNB = 2\n\n\n@program\ndef scaled(x: f32['M']) -> f32['M']:\n"
        "    out = zeros((M,))\n    for i in range(M):\n        out[i] = x[i] * SCALE\n    return out\n\n\n"
        "@program\ndef bounded(x: f32['M']) -> f32['M']:\n    out = zeros((M,))\n    for i in range(NB):\n"
        "        out[i] = x[i] * 2.0\n    return out\n")
    script = tmp_path / "constants_main.py"
    script.write_text(CONSTANTS_MAIN.format(mods=str(mods)))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "[0.0, 5.0, 10.0, 15.0] [0.0, 2.0, 4.0, 0.0]", r.stdout
