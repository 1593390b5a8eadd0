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

`TritonCompiled.configs` shows what each matmul kernel used and why, with the timings.
"""
from __future__ import annotations

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


class Tuner:
    """The configs chosen for one compiled runner, per (kernel, shape, dtypes, precision)."""

    def __init__(self, on: bool | None = None, timer: Callable = bench_ms, configs=CONFIGS):
        self.on = enabled() if on is None else on
        self.timer = timer
        self.configs = tuple(configs)
        self.choices: dict = {}  # key -> Choice
        self._lock = threading.Lock()

    def config(self, key: tuple, launch: Callable) -> Config:
        """The config for `key` (its first element the kernel's name), tuned with
        `launch(config)` on first use when tuning is on; DEFAULT when it is off."""
        if not self.on:
            return DEFAULT
        got = self.choices.get(key)
        if got is None:
            with self._lock:  # one tuning per key, whichever thread gets there first
                got = self.choices.get(key)
                if got is None:
                    got = self.choices[key] = choose(self.configs, launch, self.timer)
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
