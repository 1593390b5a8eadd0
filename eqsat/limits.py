"""Limits on saturation, in one object; each can be overridden by an environment variable."""
from __future__ import annotations

import contextlib
import gc
import math
import os
import threading
import time
from dataclasses import dataclass, field, fields

from .errors import ArgumentError


def _env(name: str, default, cast):
    """The environment variable's value (a whole number where `cast` is int: `1e5` is 100000),
    else the default; a value that is no number is an ArgumentError naming the variable."""
    v = os.environ.get(name)
    if v in (None, ""):
        return default
    try:
        x = float(v)
        if cast is int:
            if not x.is_integer():
                raise ValueError
            return int(x)
        return x
    except (ValueError, OverflowError):
        raise ArgumentError(f"environment variable {name} must be {'a whole number' if cast is int else 'a number'}, "
                            f"got {v!r}") from None


# the largest count egglog takes (its counters are 64-bit signed)
MAX_COUNT = 2**62


@dataclass(frozen=True)
class Limits:
    """Bounds on equality saturation. The best form found so far is used when one is hit.

    nodes:       stop once the e-graph holds more e-nodes than this
    iterations:  rounds of (support rules to saturation + each family once)
    seconds:     wall-clock budget for optimize() as a whole (lowering, build, rewrites,
                 extraction): loop nests whose lifting is predicted to pass it are kept
                 as written without analysis (lower.lift_next), and saturation stops when its next
                 step and the extraction after it are predicted to pass it. The first
                 `egraph.MIN_ROUNDS` (3) rounds of rewrites may run late, up to
                 `egraph.GRACE` (1.15) times the limit, predicted (egraph._Budget)
    match_limit: a rule matching more often than this in a step is skipped in that step
                 (egglog's back-off scheduler; keeps x*y = y*x from exploding). Each step
                 is its own call into egglog with a fresh scheduler, so a ban lasts one
                 step (egraph.PLAIN_BELOW: small e-graphs step without the scheduler
                 until some rule passes this)
    support_rounds: at most this many rounds of the fact rules between rewrite rounds
    memory_mb:   stop saturating once the process's resident memory passes this (default:
                 half the machine's memory); `inf` for no bound
    extract_seconds_per_node: reading the e-graph back and extracting, per e-node (used to
                 stop saturation in time for them)

    Every value must be a positive number (`seconds` and `memory_mb` may be `inf`: no
    bound); NaN, zero and negative values raise an ArgumentError naming the field.
    """

    nodes: int = field(default_factory=lambda: _env("EQSAT_NODES", 50_000, int))
    iterations: int = field(default_factory=lambda: _env("EQSAT_ITERATIONS", 30, int))
    seconds: float = field(default_factory=lambda: _env("EQSAT_SECONDS", 10.0, float))
    match_limit: int = field(default_factory=lambda: _env("EQSAT_MATCH_LIMIT", 2_000, int))
    support_rounds: int = field(default_factory=lambda: _env("EQSAT_SUPPORT_ROUNDS", 40, int))
    memory_mb: float = field(default_factory=lambda: _env("EQSAT_MEMORY_MB", _half_of_memory(), float))
    extract_seconds_per_node: float = 2e-5  # per e-node counted by saturation (facts included): reading back,
    # extracting and explaining the 200-layer chain took 0.44 s for 51k of them (2-core VM); 2x margin

    def __post_init__(self):
        unbounded = {"seconds", "memory_mb"}
        for f in fields(self):
            v = getattr(self, f.name)
            whole = f.type in ("int", int)
            if type(v).__module__ == "numpy" and getattr(v, "size", None) == 1 and not isinstance(v, bool):
                v = v.item()  # (np.int64(100), np.float32(2.5): the number they hold)
                object.__setattr__(self, f.name, v)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or (whole and not isinstance(v, int)):
                raise ArgumentError(f"Limits.{f.name} must be {'an integer' if whole else 'a number'}, got {v!r}")
            shown = f"an integer of {len(str(v))} digits" if isinstance(v, int) and v > MAX_COUNT else repr(v)
            if not whole and isinstance(v, int) and v > MAX_COUNT:
                try:
                    float(v)
                except OverflowError:  # (10**400: past every float; `inf` is "no bound")
                    raise ArgumentError(f"Limits.{f.name} is too large for a float, got {shown}") from None
            if (isinstance(v, float) and math.isnan(v)) or v <= 0:
                raise ArgumentError(f"Limits.{f.name} must be positive, got {v!r}")
            if isinstance(v, float) and math.isinf(v) and f.name not in unbounded:
                raise ArgumentError(f"Limits.{f.name} must be finite, got {v!r}")
            if whole and v > MAX_COUNT:
                raise ArgumentError(f"Limits.{f.name} must be at most 2**62, got {shown}")


# A loop nest's analysis still running at this fraction of `Limits.seconds` is abandoned
# (isl's operations are bounded by the time left, `lower.ISL_OPS_PER_SECOND`) and the nest
# kept as written: one long loop body's flow problem (600 statements: ~3 s) cannot take the
# limit. Which nests are analysed at all is `lower.lift_next`'s prediction.
ANALYSIS_SHARE = 2 / 3


class OutOfTime(Exception):
    """A loop nest's analysis ran past its deadline (`analysis_deadline`): the nest is
    kept as written. isl's own operations are bounded by a quota (`dataflow.operation_quota`);
    this bounds the Python passes around them (if-conversion of a long elif chain, the
    lowering of what it makes), which check it where their work grows."""


_DEADLINE = threading.local()


@contextlib.contextmanager
def analysis_deadline(at: float | None):
    """`check_deadline` raises OutOfTime past `at` (a `time.perf_counter()` value; None: no
    deadline) on this thread for the duration."""
    before = getattr(_DEADLINE, "at", None)
    _DEADLINE.at = at
    try:
        yield
    finally:
        _DEADLINE.at = before


def check_deadline() -> None:
    at = getattr(_DEADLINE, "at", None)
    if at is not None and time.perf_counter() > at:
        raise OutOfTime


def _half_of_memory() -> float:
    """Half the machine's memory in MB (4096 where /proc/meminfo cannot be read)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024 / 2
    except OSError:
        pass
    return 4096.0


def resident_mb() -> float:
    """This process's resident memory in MB (0 where /proc cannot be read): statm's second
    field, in pages (one short line, a third of the time of parsing /proc/self/status)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_MB
    except (OSError, ValueError, IndexError):
        return 0.0


try:
    _PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20
except (AttributeError, ValueError, OSError):
    _PAGE_MB = 4096 / 2**20


_LIBC: list = []  # [the C library's malloc_trim, or None where there is none]


def give_back_memory() -> None:
    """Return the C heap's free pages to the system (glibc's `malloc_trim`; nothing where
    the C library has none). An optimize() call frees its e-graph, but glibc keeps freed
    memory in the arena of the thread that used it: with several threads calling
    optimize(), resident memory settled near twice as high without this
    (bench/soak_bench.py). It costs well under a millisecond."""
    if not _LIBC:
        try:
            import ctypes

            _LIBC.append(ctypes.CDLL("libc.so.6").malloc_trim)
        except (OSError, AttributeError):
            _LIBC.append(None)
    if _LIBC[0] is not None:
        _LIBC[0](0)


# Python's full collections (generation 2) walk every tracked object in the process: with
# eqsat's modules, egglog-python's declarations and a long program's terms that is ~90 ms
# each, and the default thresholds ran four of them in one optimize() of the 200-layer
# loop chain (0.36 s of 2.6). The terms eqsat builds are acyclic and freed by reference
# counting, so during optimize() full collections are made ten times rarer (the third
# threshold 10 -> 100; the young generations keep theirs), and the process's own setting
# comes back when the last concurrent call ends. The prepared e-graph's renewal still
# collects in full where egglog-python's cycles need it (egraph._Prepared.close).
FULL_COLLECTIONS_EVERY = 100
_GC_LOCK = threading.Lock()
_GC_STATE: list = [0, None]  # [calls inside, the thresholds to restore]


@contextlib.contextmanager
def rare_full_collections():
    """Full garbage collections ten times rarer for the duration (see above)."""
    with _GC_LOCK:
        if _GC_STATE[0] == 0:
            _GC_STATE[1] = gc.get_threshold()
            g0, g1, g2 = _GC_STATE[1]
            gc.set_threshold(g0, g1, max(g2, FULL_COLLECTIONS_EVERY))
        _GC_STATE[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_STATE[0] -= 1
            if _GC_STATE[0] == 0:
                gc.set_threshold(*_GC_STATE[1])
