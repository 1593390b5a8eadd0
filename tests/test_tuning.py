"""Matmul tile configs (backends/tuning.py): the list is valid, a machine without a GPU
launches the default tile exactly as before and times nothing, and the tuning logic picks
the fastest config, skips one that fails, and tunes each key once; with a fake timer
standing in for the GPU's, so all of it runs in Triton's interpreter."""
from __future__ import annotations

import pytest

import eqsat
from conftest import CORPUS, load_case, random_args, rel_err
from eqsat.backends import registry, triton_backend, tuning
from eqsat.backends.tuning import CONFIGS, DEFAULT, Config

triton_backend._ensure_triton()  # (before a test imports triton itself: its interpreter is chosen at import)

pytestmark = pytest.mark.skipif(tuning.enabled(), reason="checks the path taken without a CUDA device")

SHAPES = {"M": 100, "N": 70, "K": 40}  # not multiples of any tile: every config masks its edges


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _plan():
    mod, prog = load_case(CORPUS / "residual_gelu.py")  # one matmul kernel, epilogue add+gelu
    return mod, prog, eqsat.optimize(prog, SHAPES)


def test_the_config_list_is_valid():
    assert 6 <= len(CONFIGS) <= 12 and len(set(CONFIGS)) == len(CONFIGS)
    assert CONFIGS[0] == DEFAULT  # ties go to the default
    for c in CONFIGS:
        assert all(_pow2(b) and b >= 16 for b in (c.block_m, c.block_n, c.block_k)), c  # tl.dot: >= 16
        assert _pow2(c.num_warps) and c.num_warps <= 16, c
        assert 1 <= c.num_stages <= 5, c
        assert c.smem_bytes(4) <= 227 * 1024, c  # fp32 operand tiles fit an H100 block
        assert c.launch == {**c.meta, "num_warps": c.num_warps, "num_stages": c.num_stages}
    assert DEFAULT.grid(100, 70, 3) == (2, 2, 3) and Config(32, 64, 32).grid(1, 1) == (1, 1, 1)


def test_the_default_is_the_tile_the_backend_always_used():
    from triton.backends.nvidia.compiler import CUDAOptions

    from eqsat.backends import triton_backend

    assert (DEFAULT.block_m, DEFAULT.block_n, DEFAULT.block_k) == (64, 64, 32)
    # what a launch that passes no num_warps / num_stages gets
    assert (DEFAULT.num_warps, DEFAULT.num_stages) == (CUDAOptions.num_warps, CUDAOptions.num_stages)
    _, _, plan = _plan()
    (k,) = triton_backend._kernels(plan)
    assert k.meta == DEFAULT.meta and k.grid == (2, 2, 1) and k.gemm_size == (100, 70, 1)


def test_without_a_gpu_the_default_is_used_and_nothing_is_timed(monkeypatch):
    mod, prog, plan = _plan()
    runner = plan.compiled("triton")
    assert not runner.tuner.on
    assert "matmul tiles 64x64x32 w4 s3 (the default, not tuned)" in runner.how

    def never(*a, **k):
        raise AssertionError("tuned without a GPU")
    monkeypatch.setattr(tuning, "choose", never)
    monkeypatch.setattr(tuning, "bench_ms", never)
    args = random_args(prog, SHAPES, 1)
    assert rel_err(plan.run(*args, backend="triton"), mod.truth(*args)) < 1e-4
    (choice,) = runner.configs.values()
    assert choice.config == DEFAULT and not choice.tuned and "no CUDA device" in choice.why
    assert runner.tuner.choices == {}


def test_tuning_turned_off_on_a_gpu(monkeypatch):
    monkeypatch.setattr(registry, "_on_a_gpu", lambda: True)
    assert tuning.enabled()
    monkeypatch.setenv("EQSAT_TRITON_TUNE", "0")
    assert not tuning.enabled()


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test its own cache of tuned choices: a file of its own, a fresh process cache."""
    path = tmp_path / "tuning.json"
    monkeypatch.setenv("EQSAT_TUNING_CACHE", str(path))
    monkeypatch.setattr(tuning, "_SHARED", [])
    return path


def _recording(ran: list, ms: dict):
    """A tuner on the GPU's path whose timed launches are noted in `ran`."""
    class Recording(tuning.Tuner):
        def config(self, key, launch, shared=None, flops=None):
            return super().config(key, lambda c: (ran.append(c), launch(c)), shared, flops)
    return Recording(on=True, timer=_fake_timer(ms, ran), min_flops=0)


def _fake_timer(ms: dict, ran: list):
    """A timer that runs the launch once and returns the time `ms` gives its config."""
    def timer(fn):
        fn()
        return ms.get(str(ran[-1]), 1.0)
    return timer


def test_choose_picks_the_fastest_and_skips_a_config_that_fails():
    ran = []

    def launch(c):
        ran.append(c)
        if c == CONFIGS[5]:
            raise RuntimeError("out of resources: shared memory")
    fast = {str(CONFIGS[3]): 0.25, str(CONFIGS[5]): 0.01, str(CONFIGS[7]): 0.5}
    got = tuning.choose(CONFIGS, launch, _fake_timer(fast, ran))
    assert ran == list(CONFIGS)  # each config tried once
    assert got.config == CONFIGS[3] and got.tuned  # CONFIGS[5] would be faster but does not run
    assert got.timings_ms[str(CONFIGS[3])] == 0.25 and got.timings_ms[str(DEFAULT)] == 1.0
    assert got.timings_ms[str(CONFIGS[5])].startswith("skipped: RuntimeError")
    assert "fastest of 9 configs" in got.why and "default 1.000 ms" in got.why


def test_choose_breaks_ties_toward_the_default_and_falls_back_when_nothing_runs():
    assert tuning.choose(CONFIGS, lambda c: None, lambda fn: 1.0).config == DEFAULT

    def fails(c):
        raise RuntimeError("no")
    got = tuning.choose(CONFIGS, fails, lambda fn: fn())
    assert got.config == DEFAULT and not got.tuned and "no config ran" in got.why


def test_the_tuner_tunes_each_key_once():
    timed = []
    tuner = tuning.Tuner(on=True, timer=lambda fn: timed.append(1) or 1.0)
    key = ("k0_matmul", (100, 70), ("torch.float32",), "tf32")
    assert tuner.config(key, lambda c: None) == DEFAULT
    assert tuner.config(key, lambda c: None) == DEFAULT and len(timed) == len(CONFIGS)
    tuner.config(("k0_matmul", (200, 70), ("torch.float32",), "tf32"), lambda c: None)  # another shape
    assert len(timed) == 2 * len(CONFIGS)
    assert tuner.choice("k0_matmul").tuned and not tuning.Tuner(on=False).choice("k0_matmul").tuned


def test_the_tuned_path_launches_the_chosen_config_and_keeps_it():
    """The GPU's code path, run in the interpreter with a fake timer: every config is
    launched for real while tuning, the fastest is kept and shown, the result is right,
    and the next call times nothing."""
    ran = []

    class Recording(tuning.Tuner):  # notes which config each timed launch runs
        def config(self, key, launch, shared=None, flops=None):
            return super().config(key, lambda c: (ran.append(c), launch(c)), shared, flops)

    mod, prog, plan = _plan()
    runner = plan.compiled("triton")
    want = CONFIGS[-1]
    runner.tuner = Recording(on=True, timer=_fake_timer({str(want): 0.1}, ran), min_flops=0)
    args = random_args(prog, SHAPES, 2)
    assert rel_err(runner(tuple(args)), mod.truth(*args)) < 1e-4
    assert ran == list(CONFIGS)
    (choice,) = runner.configs.values()
    assert choice.config == want and choice.tuned and "0.100 ms" in choice.why
    (key,) = runner.tuner.choices
    assert key == ("k0_matmul", (100, 70), ("torch.float32",) * 5, "ieee")  # (the output, then the inputs)
    assert rel_err(runner(tuple(args)), mod.truth(*args)) < 1e-4
    assert ran == list(CONFIGS)  # kept: not tuned again


def test_a_tuned_launch_is_kept_for_other_plans_and_later_processes(own_cache, monkeypatch):
    """A second plan of the same program times nothing (the process's cache), nor does a
    later process (the file); a corrupt file is tuned over and rewritten; `off` keeps the
    choices in the process."""
    import json

    ran = []
    want = CONFIGS[4]
    mod, prog, plan = _plan()
    args = random_args(prog, SHAPES, 3)

    def run_fresh_plan():
        runner = eqsat.optimize(prog, SHAPES).compiled("triton")
        runner.tuner = _recording(ran, {str(want): 0.1})
        assert rel_err(runner(tuple(args)), mod.truth(*args)) < 1e-4
        (choice,) = runner.configs.values()
        return choice

    first = run_fresh_plan()
    assert ran == list(CONFIGS) and first.config == want and first.tuned
    (entry,) = json.loads(own_cache.read_text()).values()
    assert entry["config"] == [want.block_m, want.block_n, want.block_k, want.num_warps, want.num_stages]

    again = run_fresh_plan()  # another plan, this process
    assert len(ran) == len(CONFIGS) and again.config == want and again.why.startswith("tuned earlier")

    monkeypatch.setattr(tuning, "_SHARED", [])  # a later process: only the file
    later = run_fresh_plan()
    assert len(ran) == len(CONFIGS) and later.config == want and "0.100 ms" in later.why

    own_cache.write_text("{not json")
    monkeypatch.setattr(tuning, "_SHARED", [])
    assert run_fresh_plan().config == want and len(ran) == 2 * len(CONFIGS)  # tuned over
    assert len(json.loads(own_cache.read_text())) == 1

    monkeypatch.setenv("EQSAT_TUNING_CACHE", "off")
    monkeypatch.setattr(tuning, "_SHARED", [])
    own_cache.unlink()
    assert tuning.cache_path() is None
    run_fresh_plan()
    run_fresh_plan()
    assert len(ran) == 3 * len(CONFIGS) and not own_cache.exists()


def test_the_launch_key_tells_apart_what_changes_a_launch():
    key = tuning.launch_key
    base = key("H100", "def k0_matmul(x): pass", "k0_matmul", (64, 64, 1), (1, 64), "tf32")
    assert base == key("H100", "def k3_matmul(x): pass", "k3_matmul", (64, 64, 1), (1, 64), "tf32")  # the name aside
    for other in (key("A100", "def k0_matmul(x): pass", "k0_matmul", (64, 64, 1), (1, 64), "tf32"),
                  key("H100", "def k0_matmul(y): pass", "k0_matmul", (64, 64, 1), (1, 64), "tf32"),
                  key("H100", "def k0_matmul(x): pass", "k0_matmul", (64, 32, 1), (1, 64), "tf32"),
                  key("H100", "def k0_matmul(x): pass", "k0_matmul", (64, 64, 1), (64, 1), "tf32"),
                  key("H100", "def k0_matmul(x): pass", "k0_matmul", (64, 64, 1), (1, 64), "ieee")):
        assert other != base


def test_triton_imported_first_gives_a_clear_error(tmp_path):
    """Without a CUDA device the backend runs Triton's interpreter, which Triton chooses when
    it is imported: a caller who imported triton first gets an error that says what to do,
    not a failure inside a kernel (or a CUDA call on a machine without CUDA)."""
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "first.py"
    script.write_text(
        "import os, sys\n"
        "os.environ.pop('TRITON_INTERPRET', None)\n"
        "import triton\n"
        f"sys.path[:0] = [{str(Path(__file__).parent)!r}]\n"
        "import numpy as np, eqsat\n"
        "from conftest import CORPUS, load_case, random_args\n"
        "mod, prog = load_case(CORPUS / 'residual_gelu.py')\n"
        "shapes = {'M': 4, 'N': 4, 'K': 4}\n"
        "plan = eqsat.optimize(prog, shapes)\n"
        "try:\n"
        "    plan.run(*random_args(prog, shapes, 0), backend='triton')\n"
        "except RuntimeError as e:\n"
        "    print('ERROR', e)\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert "ERROR" in out.stdout and "set TRITON_INTERPRET=1" in out.stdout, out.stdout + out.stderr[-2000:]


def test_a_small_product_keeps_the_default_untuned():
    """Tuning compiles every config (seconds); a product of microseconds keeps DEFAULT."""
    ran = []
    mod, prog, plan = _plan()
    runner = plan.compiled("triton")
    runner.tuner = tuning.Tuner(on=True, timer=_fake_timer({}, ran))  # the default threshold
    args = random_args(prog, SHAPES, 4)
    assert rel_err(runner(tuple(args)), mod.truth(*args)) < 1e-4
    (choice,) = runner.configs.values()
    assert ran == [] and choice.config == DEFAULT and not choice.tuned and "worth tuning" in choice.why
    assert 2 * 100 * 70 * 40 < tuning.MIN_TUNE_FLOPS
