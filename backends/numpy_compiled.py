"""A plan as one straight-line numpy function, built once: what `Plan.run` executes.

Interpreting a plan's terms on every call costs tens of microseconds of Python before
any numpy work (walking terms, deciding views, broadcasts and in-place reuse). None of
those decisions depend on the data, only on the plan and its sizes (numpy_backend.py),
so the interpreter runs once on sample inputs with a recorder in numpy's place: every
operation is carried out and written down as a line of code, and the lines become one
function. What the walk computed without the recorder (index arrays, constants) is data
independent and becomes a read-only constant of that function.

The function is checked before use: on a second, different sample it must give exactly
the interpreter's results (the same operations in the same order, so bit for bit). A
plan it cannot trace, or whose check fails, runs interpreted, and `Plan.runner` says why.
"""
from __future__ import annotations

import operator
import os
import re
import sys

import numpy as np

from eqsat.args import bind_args

from . import numpy_backend

_ATOMS = (int, float, bool, str, type(None), slice, type(Ellipsis))
_PURE = {operator.getitem, numpy_backend._as_f32, numpy_backend._as_f64}  # calls with no effect but their value
_NAME = re.compile(r"\bt\d+\b")


class Untraceable(RuntimeError):
    pass


class Recorder:
    """numpy's interface (`rec.add(...)`, `rec.call(fn, ...)`): runs each operation and
    writes it down. Values are named by identity; every value stays alive while recording,
    so an identity is never reused."""

    def __init__(self):
        self.lines: list = []
        self.consts: dict = {}  # name -> value (functions, dtypes, static arrays)
        self._const_ids: dict = {}
        self.names: dict = {}  # id(value) -> expression
        self.keep: list = []
        self.pure: set = set()  # indexes of lines that only compute their value
        self._n = 0

    def bind(self, value, name: str) -> None:
        self.names[id(value)] = name
        self.keep.append(value)

    def const(self, value) -> str:
        name = self._const_ids.get(id(value))
        if name is None:
            name = self._const_ids[id(value)] = f"_k{len(self.consts)}"
            self.keep.append(value)  # alive while recording: its identity names it
            if isinstance(value, np.ndarray):
                value = value.copy()  # a constant the code might write would be wrong next call:
                value.flags.writeable = False  # writing it raises, and the check refuses the plan
            self.consts[name] = value
        return name

    def expr(self, x) -> str:
        name = self.names.get(id(x))
        if name is not None:
            return name
        if isinstance(x, _ATOMS) and not isinstance(x, float):
            return repr(x)
        if isinstance(x, tuple):
            return "(" + "".join(self.expr(y) + ", " for y in x) + ")"
        if isinstance(x, list):
            return "[" + ", ".join(self.expr(y) for y in x) + "]"
        return self.const(x)  # a float (repr would round-trip, but keep its type), an array, ...

    def call(self, fn, *args, **kw):
        out = fn(*args, **kw)
        parts = [self.expr(a) for a in args] + [f"{k}={self.expr(v)}" for k, v in kw.items()]
        text = f"{self.const(fn)}({', '.join(parts)})"
        if out is None:
            self.lines.append(text)
            return out
        if "out" in kw and out is kw["out"]:
            self.lines.append(text)  # written in place: the name stays
            return out
        self._n += 1
        name = f"t{self._n}"
        self.lines.append(f"{name} = {text}")
        if fn in _PURE:
            self.pure.add(len(self.lines) - 1)
        self.bind(out, name)
        return out

    def live_lines(self, result: str) -> list:
        """The lines without the pure ones whose value nothing reads (a nest's returned
        scalars that no kernel uses, say): each costs a call on every run."""
        keep, used = [], set(_NAME.findall(result))
        for k in range(len(self.lines) - 1, -1, -1):
            line = self.lines[k]
            if k in self.pure and line.split(" = ", 1)[0] not in used:
                continue
            keep.append(line)
            used.update(_NAME.findall(line))
        return keep[::-1]

    def __getattr__(self, name):
        fn = getattr(np, name)
        return lambda *args, **kw: self.call(fn, *args, **kw)


def _samples(plan, seed: int) -> tuple[list, dict]:
    """Arguments of the plan's shapes: values from a normal distribution, distinct objects."""
    rng = np.random.default_rng(seed)
    vals, scalars = [], {}
    for p in plan.program.params:
        if p.dtype is int:
            vals.append(int(plan.dims[p.name]))
        elif p.shape is None:
            v = np.float32(rng.standard_normal() + 2.0)
            vals.append(v)
            scalars[p.name] = v
        else:
            shape = tuple(d if isinstance(d, int) else plan.dims[d] for d in p.shape)
            vals.append(rng.standard_normal(shape).astype(np.float32))
    return vals, scalars


def trace(plan):
    """(the plan's source text, its namespace) from one recorded run on sample inputs."""
    from . import loops

    for nest in plan.lowered.nests.values():
        unset = loops.unset_read(plan, nest)
        if unset:  # whether the nest assigns it depends on the data: the next steps' code does too
            raise Untraceable(f"loop nest #{nest.id} may leave {', '.join(sorted(unset))} unassigned, "
                              f"and a later step reads it")
    rec = Recorder()
    vals, scalars = _samples(plan, 0)
    params = [p.name for p in plan.program.params]
    for name, v in zip(params, vals):
        if not isinstance(v, int):
            rec.bind(v, name)
    out = numpy_backend.run(plan, vals, scalars, rec)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if id(o) not in rec.names:
            raise Untraceable("an output does not come from the plan's operations")
    result = f"return {', '.join(rec.names[id(o)] for o in outs)}" + ("," if isinstance(out, tuple) and
                                                                        len(outs) == 1 else "")
    body = rec.live_lines(result) + [result]
    src = f"def plan_fn({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body)
    return src, dict(rec.consts)


# glibc hands a freed block above its mmap threshold (128 KB at first) back to the OS, and
# trims the heap's free top, so a plan's large temporaries are fresh pages on every run,
# which the kernel zero-fills at first touch (~0.25 ms a MB): sin(x) * cos(y) + sin((y - x) /
# 2) ** 2 over 1000x1000 ran 10.7 ms, against 2.6 ms with freed memory kept for reuse
# (numpy's own `a * b + c` reuses its temporaries in place, which named ones cannot be).
# So the first numpy-backend plan of a process raises both thresholds to KEEP_FREED_BYTES:
# the process keeps up to that much freed memory for its next allocations rather than
# returning it (its resident size after a large run stays up). EQSAT_KEEP_FREED_MEMORY=0
# leaves the allocator as it is; elsewhere than glibc nothing is done.
KEEP_FREED_BYTES = 256 << 20
_KEPT: list = []


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds once per process (see above); whether done."""
    if _KEPT:
        return _KEPT[0]
    done = False
    if os.environ.get("EQSAT_KEEP_FREED_MEMORY", "1") != "0" and sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL("libc.so.6")
            m_trim_threshold, m_mmap_threshold = -1, -3  # (glibc's malloc.h)
            done = bool(libc.mallopt(m_mmap_threshold, KEEP_FREED_BYTES)) and \
                bool(libc.mallopt(m_trim_threshold, KEEP_FREED_BYTES))
        except (OSError, AttributeError):  # (not glibc)
            done = False
    _KEPT.append(done)
    return done


class Compiled:
    """`plan.run` for the numpy backend: the straight-line function when it checked out,
    with a fast path for arguments already of the plan's kind (float32, C-contiguous,
    the plan's shapes); anything else is converted and checked by `bind_args` first."""

    def __init__(self, plan):
        keep_freed_memory()
        self.plan = plan
        self.fn = None
        self.source = ""
        self.how = "interpreted"
        self._kinds = []  # per parameter: ("int", size) | ("scalar", None) | ("array", shape)
        for p in plan.program.params:
            if p.dtype is int:
                self._kinds.append(("int", plan.dims[p.name]))
            elif p.dtype.name != "f32":
                self._kinds.append(("convert", None))  # rounded to its dtype on the checked path
            elif p.shape is None:
                self._kinds.append(("scalar", None))
            else:
                self._kinds.append(("array", tuple(d if isinstance(d, int) else plan.dims[d] for d in p.shape)))
        try:
            with np.errstate(all="ignore"):  # sample inputs: a sqrt of a negative is no news
                src, ns = trace(plan)
                vals, scalars = _samples(plan, 1)
                want = numpy_backend.run(plan, vals, scalars)
            exec(compile(src, f"<eqsat plan {plan.program.name}>", "exec"), ns)
            fn = ns["plan_fn"]
            with np.errstate(all="ignore"):
                got = fn(*vals)
            if not _same(got, want):
                raise Untraceable("the straight-line code disagreed with the interpreter on a check")
        except Untraceable as e:
            self.how = f"interpreted ({e})"
        except Exception as e:  # e.g. a constant the code tried to write: never worse than interpreting
            self.how = f"interpreted (could not trace: {type(e).__name__}: {e})"
        else:
            self.fn, self.source, self.how = fn, src, "compiled (straight-line numpy)"
        # what a call runs: `_entry`'s generated tests, or the checked path throughout
        self.entry = _entry(self._kinds, self.fn, self._slow) if self.fn is not None else self._slow

    def __call__(self, args):
        return self.entry(args)

    def _slow(self, args):
        plan = self.plan
        vals, dims = bind_args(plan.program, args, plan.unbound_dims(), copy=False)
        plan.check_dims_of_call(dims)
        if self.fn is None:
            scalars = {p.name: v for p, v in zip(plan.program.params, vals) if p.shape is None and p.dtype is not int}
            return numpy_backend.run(plan, vals, scalars)
        return self.fn(*vals)


_F32 = np.dtype(np.float32)


def _entry(kinds: list, fn, slow):
    """`plan.run`'s entry as one generated function of the arguments' tuple: arguments
    already of the plan's kind (float32 arrays, C-contiguous, of the plan's shapes; floats;
    the plan's int sizes) go to the straight-line function as they are, anything else
    through `slow` (converted and checked). One test an argument, no loop: a call costs
    well under a microsecond here."""
    ns = {"ndarray": np.ndarray, "F32": _F32, "f32": np.float32, "fn": fn, "slow": slow}
    if any(kind == "convert" for kind, _ in kinds):
        return slow
    names = [f"a{i}" for i in range(len(kinds))]
    tests, call = [], []
    for i, (name, (kind, want)) in enumerate(zip(names, kinds)):
        if kind == "array":
            ns[f"s{i}"] = want
            tests.append(f"type({name}) is ndarray and ({name}.dtype is F32 or {name}.dtype == F32) and "
                         f"{name}.shape == s{i} and {name}.flags.c_contiguous")
            call.append(name)
        elif kind == "scalar":
            tests.append(f"(type({name}) is float or type({name}) is f32)")
            call.append(f"f32({name})")
        else:  # an int size: exactly the plan's
            tests.append(f"type({name}) is int and {name} == {int(want)}")
            call.append(name)
    unpack = f"    {', '.join(names)}, = args\n" if names else ""
    src = (f"def entry(args):\n    if len(args) != {len(names)}:\n        return slow(args)\n{unpack}"
           f"    if {' and '.join(tests) or 'True'}:\n        return fn({', '.join(call)})\n"
           f"    return slow(args)\n")
    exec(compile(src, "<eqsat plan entry>", "exec"), ns)
    return ns["entry"]


def _same(a, b) -> bool:
    if isinstance(a, tuple) != isinstance(b, tuple):
        return False
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    return len(a) == len(b) and all(
        np.shape(x) == np.shape(y) and np.asarray(x).dtype == np.asarray(y).dtype and
        np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))
