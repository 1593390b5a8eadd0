"""Tile configurations of the Triton matmul kernels: one default, and tuning on a GPU.

The policy, in one place:

- Without a CUDA device (Triton's interpreter, or PTX compiled ahead of time for reading)
  every matmul kernel uses `DEFAULT` and is launched exactly as before: only BLOCK_M,
  BLOCK_N and BLOCK_K are passed, num_warps and num_stages are Triton's own defaults
  (4 and 3, the values `DEFAULT` records). Nothing is timed, so the interpreter's speed
  and results do not depend on this module.
- On a CUDA device (`torch.cuda.is_available()` and TRITON_INTERPRET not 1), the first
  call of a compiled plan launches each matmul kernel under every config of `CONFIGS` on
  that call's own arguments, times it (`triton.testing.do_bench`, median; the compile of
  each config is its warm-up and is not timed) and keeps the fastest for (kernel, shape,
  dtypes, precision) for the life of the compiled runner (`TritonCompiled.tuner`).
  Relaunching is harmless: a kernel writes only its own fresh output, every element once.
  A config that does not compile or launch on this GPU (too much shared memory) is
  skipped; if none runs, `DEFAULT`. `EQSAT_TRITON_TUNE=0` turns tuning off.
- Only products of at least `MIN_TUNE_FLOPS` are tuned: compiling the 10 configs took
  11-24 s a corpus program on an H100 (one process), for kernels of microseconds.
- A tuned choice is kept for every runner of the process and on disk (`TuningCache`), under
  what decides a launch's speed: the GPU's name, Triton's version, the kernel's source (its
  name aside), its sizes, the strides and dtypes of its operands and the dot precision. So
  a second plan of the same program, or the same program in a later process, times nothing
  (on an H100, tuning took 35-65 s on a PolyBench program's first call with 16 processes
  compiling at once). The file is `EQSAT_TUNING_CACHE` (a path; `off`: the process only),
  by default `~/.cache/eqsat/triton_tuning.json`; an unreadable or corrupt file is tuned
  over, and one that cannot be written leaves the choices in the process.

`TritonCompiled.configs` shows what each matmul kernel used and why, with the timings.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Config:
    """One launch configuration of a tiled matmul kernel."""

    block_m: int
    block_n: int
    block_k: int
    num_warps: int = 4
    num_stages: int = 3

    @property
    def meta(self) -> dict:
        """The kernel's constexpr block sizes."""
        return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_n, "BLOCK_K": self.block_k}

    @property
    def launch(self) -> dict:
        """Every launch keyword: block sizes, warps, pipeline stages."""
        return {**self.meta, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def grid(self, m: int, n: int, batch: int = 1) -> tuple:
        return (max(1, -(-m // self.block_m)), max(1, -(-n // self.block_n)), batch)

    def smem_bytes(self, item: int = 4) -> int:
        """Shared memory the operand tiles take when every stage is buffered (fp32: 4 bytes)."""
        return (self.block_m + self.block_n) * self.block_k * item * self.num_stages

    def __str__(self) -> str:
        return f"{self.block_m}x{self.block_n}x{self.block_k} w{self.num_warps} s{self.num_stages}"


# The tile of the interpreter and of every launch without a GPU (the backend's tile before
# tuning existed): small enough that the interpreter stays quick on small plans.
DEFAULT = Config(64, 64, 32, num_warps=4, num_stages=3)

# What a GPU tunes over. The kernels' operands are fp32 tensors (f16 inputs are widened
# before the kernels) and tl.dot runs in tf32 on tensor cores, so a stage holds
# (BLOCK_M + BLOCK_N) * BLOCK_K * 4 bytes. Large square tiles for large GEMMs, rectangular
# ones for tall or wide outputs, small ones where few tiles would leave SMs idle (BERT's
# N=768). Compiled ahead of time for the linear+bias+gelu kernel, every one builds for sm_90
# (wgmma, except 32x64's mma.sync) within H100's 227 KB of shared memory a block (the
# largest, 128x128x64 s3, 192 KB) and for sm_80 within A100's 163 KB (128 KB). DEFAULT is
# among them, so tuning never keeps a tile slower than the default beyond timing noise.
CONFIGS = (
    DEFAULT,
    Config(128, 128, 32, num_warps=8, num_stages=3),
    Config(128, 128, 32, num_warps=4, num_stages=4),
    Config(128, 64, 32, num_warps=4, num_stages=4),
    Config(64, 128, 32, num_warps=4, num_stages=4),
    Config(128, 256, 32, num_warps=8, num_stages=3),
    Config(256, 128, 32, num_warps=8, num_stages=3),
    Config(128, 128, 64, num_warps=8, num_stages=3),
    Config(64, 64, 64, num_warps=4, num_stages=4),
    Config(32, 64, 32, num_warps=4, num_stages=4),
)


# 2·M·N·K·batch below which a matmul launch keeps DEFAULT untuned (BERT's 2048x768x768
# projection, 2.4e9, is tuned: its tile mattered there, 0.020 against 0.058 ms)
MIN_TUNE_FLOPS = 2 ** 30


@dataclass(frozen=True)
class Choice:
    """The config a kernel's launches use, whether it was tuned, and why."""

    config: Config
    tuned: bool
    why: str
    timings_ms: dict = field(default_factory=dict)  # str(config) -> ms, or the error that skipped it

    def __str__(self) -> str:
        return f"{self.config} ({self.why})"


def enabled() -> bool:
    """Whether launches are tuned here: a CUDA device, not the interpreter, not turned off."""
    from .registry import _on_a_gpu

    return os.environ.get("EQSAT_TRITON_TUNE", "1") != "0" and _on_a_gpu()


def bench_ms(fn: Callable) -> float:
    """Median milliseconds of `fn` on the GPU (its first run, which compiles, not counted)."""
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median"))


def choose(configs, launch: Callable, timer: Callable = bench_ms) -> Choice:
    """The fastest of `configs`: `launch(config)` runs the kernel once under it, `timer(fn)`
    returns the milliseconds `fn` takes. A config whose launch raises is skipped; ties go
    to the earlier config (DEFAULT first)."""
    times, notes = {}, {}
    for c in configs:
        try:
            times[c] = timer(lambda c=c: launch(c))
            notes[str(c)] = times[c]
        except Exception as e:  # does not compile or launch here (shared memory, registers)
            notes[str(c)] = f"skipped: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
    if not times:
        return Choice(DEFAULT, False, "default: no config ran when tuning", notes)
    best = min(times, key=times.get)
    base = f"; default {times[DEFAULT]:.3f} ms" if DEFAULT in times else ""
    return Choice(best, True, f"fastest of {len(times)} configs on this GPU ({times[best]:.3f} ms{base})", notes)


def cache_path() -> str | None:
    """Where tuned choices are kept between processes (None: in the process only)."""
    path = os.environ.get("EQSAT_TUNING_CACHE")
    if path is not None:
        return None if path.strip().lower() in ("", "0", "off", "none") else path
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(home, "eqsat", "triton_tuning.json")


class TuningCache:
    """Tuned choices by launch key (a string: `launch_key`), for the whole process and,
    where `path` is set, in a JSON file that every process reads once and merges into when
    it tunes something new (written whole to a temporary file, then renamed over it)."""

    def __init__(self, path: str | None):
        self.path = path
        self.entries: dict = {}  # launch key -> Choice
        self._loaded = False
        self._lock = threading.Lock()

    def get(self, key: str) -> Choice | None:
        with self._lock:
            if not self._loaded:
                self._loaded = True
                for k, c in self._read().items():
                    self.entries.setdefault(k, c)
            return self.entries.get(key)

    def put(self, key: str, choice: Choice) -> None:
        with self._lock:
            self.entries[key] = choice
            if self.path is None or not choice.tuned:
                return
            merged = {**self._read(), key: choice}
            try:
                os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
                tmp = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
                with open(tmp, "w") as f:
                    json.dump({k: _as_json(c) for k, c in merged.items()}, f, indent=0, sort_keys=True)
                os.replace(tmp, self.path)
            except OSError:  # (a read-only home: the choice stays in this process)
                pass

    def _read(self) -> dict:
        if self.path is None:
            return {}
        try:
            with open(self.path) as f:
                raw = json.load(f)
            return {k: _from_json(v) for k, v in raw.items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):  # none yet, or not ours
            return {}


def _as_json(c: Choice) -> dict:
    x = c.config
    return {"config": [x.block_m, x.block_n, x.block_k, x.num_warps, x.num_stages], "why": c.why,
            "timings_ms": c.timings_ms}


def _from_json(v: dict) -> Choice:
    return Choice(Config(*(int(n) for n in v["config"])), True, str(v["why"]), dict(v.get("timings_ms", {})))


_SHARED: list = []  # the process's TuningCache, made on first use (`shared_cache`)


def shared_cache() -> TuningCache:
    """The process's cache of tuned choices, at `cache_path()` as it was on first use."""
    if not _SHARED:
        _SHARED.append(TuningCache(cache_path()))
    return _SHARED[0]


def launch_key(device: str, source: str, name: str, sizes: tuple, layout: tuple, precision: str) -> str:
    """What decides a matmul launch's speed, as one string: the GPU, Triton's version, the
    kernel's source with its name taken out (`k0_matmul` of one plan is `k2_matmul` of
    another), its sizes, its operands' strides and dtypes, the dot precision."""
    import hashlib

    import triton

    digest = hashlib.sha256(source.replace(name, "KERNEL").encode()).hexdigest()[:24]
    return json.dumps([device, triton.__version__, digest, list(sizes), list(layout), precision])


class Tuner:
    """The configs chosen for one compiled runner, per (kernel, shape, dtypes, precision);
    tuned choices are shared through `cache` (the process's `shared_cache()` by default)
    under each launch's `launch_key`."""

    def __init__(self, on: bool | None = None, timer: Callable = bench_ms, configs=CONFIGS,
                 cache: TuningCache | None = None, min_flops: float = MIN_TUNE_FLOPS):
        self.on = enabled() if on is None else on
        self.min_flops = min_flops
        self.timer = timer
        self.configs = tuple(configs)
        self.cache = cache
        self.choices: dict = {}  # key -> Choice
        self._lock = threading.Lock()

    def config(self, key: tuple, launch: Callable, shared: str | Callable | None = None,
               flops: float | None = None) -> Config:
        """The config for `key` (its first element the kernel's name), tuned with
        `launch(config)` on first use when tuning is on (or taken from the cache, where an
        earlier runner tuned the launch `shared`: its `launch_key`, or a function making it,
        called on first use only); DEFAULT when it is off, or when the product's `flops` are
        below `min_flops`."""
        if not self.on:
            return DEFAULT
        got = self.choices.get(key)
        if got is None:
            with self._lock:  # one tuning per key, whichever thread gets there first
                got = self.choices.get(key)
                if got is None and flops is not None and flops < self.min_flops:
                    got = self.choices[key] = Choice(
                        DEFAULT, False, f"default: {flops:.3g} flops, below the {self.min_flops:.3g} worth tuning")
                if got is None:
                    shared = shared() if callable(shared) else shared
                    cache = self.cache if self.cache is not None else shared_cache()
                    kept = None if shared is None else cache.get(shared)
                    if kept is not None:
                        got = Choice(kept.config, True, f"tuned earlier on this GPU: {kept.why}", kept.timings_ms)
                    else:
                        got = choose(self.configs, launch, self.timer)
                        if shared is not None:
                            cache.put(shared, got)
                    self.choices[key] = got
        return got.config

    def choice(self, kernel: str) -> Choice:
        """What `kernel`'s launches use now (its latest tuned key, or the default and why)."""
        for key, c in reversed(list(self.choices.items())):
            if key[0] == kernel:
                return c
        if self.on:
            return Choice(DEFAULT, False, "default until the first call tunes it on this GPU")
        why = ("tuning turned off (EQSAT_TRITON_TUNE=0)" if os.environ.get("EQSAT_TRITON_TUNE") == "0"
               else "no CUDA device (Triton's interpreter): not tuned")
        return Choice(DEFAULT, False, f"default: {why}")
