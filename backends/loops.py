"""Loop nests kept as written, compiled: one function per nest, compiled by numba.

A kept nest is the user's own loop code. Interpreted, it runs at Python speed; here each
nest becomes a small module (its source, the sizes and module constants it reads as
globals, the language's functions bound to compiled versions) compiled with
`numba.njit(cache=True)` (numpy's error model: x / 0 is inf, as in the reference): once per
nest and sizes, cached on disk across processes. Its
arguments are the nest's tensor inputs (already copies: parameters are passed by value),
its scalar inputs and the views it reads; it returns every name the nest writes.

When to compile is a policy (`EQSAT_COMPILE_LOOPS`): `always` (the default: a plan is
usually run many times, and numba's disk cache makes the next process's first run cheap
too), `auto` (only nests of at least `COMPILE_MIN_OPS` modeled operations: below that
the interpreter finishes a single run before numba would have compiled; the test suite
uses it to stay fast), or `never`. A nest numba cannot compile runs interpreted, and the
plan says why (`Plan.loop_runners`, and `print(plan)`).
"""
from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import importlib.util
import os
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

from eqsat import desugar, lang
from eqsat.backends import scalar_types
from eqsat.parallel import parallel_loops

COMPILE_MIN_OPS = 200_000
_LIB = None  # the compiled library functions, built once per process
# source hash -> compiled nest function, shared by every plan in the process; the least
# recently used are dropped past MAX_MODULES (a service optimizing ever new programs
# must not keep every nest it ever compiled; a dropped one reloads from the disk cache)
_MODULES: "OrderedDict[str, object]" = OrderedDict()
MAX_MODULES = 256
_MODULES_LOCK = threading.Lock()


_OVERRIDE = threading.local()  # this thread's policy inside `interpreted()`


def policy() -> str:
    forced = getattr(_OVERRIDE, "mode", None)
    if forced is not None:
        return forced
    mode = os.environ.get("EQSAT_COMPILE_LOOPS", "always")
    return mode if mode in ("auto", "always", "never") else "always"


@contextlib.contextmanager
def interpreted():
    """Plans first run on this thread inside it interpret their kept nests (`never`): what
    checks a plan's values on tiny sizes uses (`eqsat.rulecheck`), where compiling each
    nest would cost seconds and change nothing."""
    before = getattr(_OVERRIDE, "mode", None)
    _OVERRIDE.mode = "never"
    try:
        yield
    finally:
        _OVERRIDE.mode = before


def cache_dir() -> Path:
    root = os.environ.get("EQSAT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "eqsat")
    path = Path(root) / "nests"
    path.mkdir(parents=True, exist_ok=True)
    return path


_LIB_SOURCE: list = []


def _lib_source() -> str:
    """The source of the functions compiled code calls (the language's, and their compiled
    forms), read once."""
    if not _LIB_SOURCE:
        from eqsat.backends import vector_math

        _LIB_SOURCE.append("".join(Path(m.__file__).read_text() for m in (lang, vector_math)))
    return _LIB_SOURCE[0]


def _lib():
    """The language's functions as numba functions (the same numpy code, compiled)."""
    global _LIB
    if _LIB is None:
        import numba

        jit = numba.njit(cache=True, error_model="numpy")
        fns = {name: jit(f) for name, f in {**lang.UNARY, **lang.BINARY}.items()}
        from eqsat.backends import vector_math  # exp, log, tanh and the functions built on them

        fns.update(vector_math.FUNCTIONS)
        fns.update(vector_math.EXACT)  # (numba's own differ from numpy's on zeros' signs)

        @numba.njit(cache=True, error_model="numpy")
        def zeros(shape):
            return np.zeros(shape, dtype=np.float32)

        @numba.njit(cache=True, error_model="numpy")
        def transpose(x, perm):
            return np.transpose(x, perm)

        @numba.njit(cache=True, error_model="numpy")
        def reshape(x, shape):  # (numba reshapes contiguous arrays only; a contiguous one is not copied)
            return np.ascontiguousarray(x).reshape(shape)

        fns.update(empty=zeros, zeros=zeros, transpose=transpose, reshape=reshape)
        _LIB = fns
    return _LIB


# a nest calling the scalar exp/log/tanh/... more often than this binds them to forms numba
# does not inline: each inlined call is a few dozen instructions LLVM then optimizes as one
# function: compiling a body of 24 such calls took 11 s and 460 MB, of 100 calls 26 s and
# 640 MB, of 250 calls past 4 GB (a probe's kept nest: a chain of tanh and sigmoid in one
# loop body); not inlined, 250 calls compile in 4 s and 220 MB
INLINE_CALLS_MAX = 8
# numba's compile time grows faster than the source: a kept nest of straight-line element
# updates (`y[3] = y[3] + x[21] * 2.0`, one per line) compiled in 4.3 s at 100 statements,
# 17 s at 300 and 289 s at 1,000 (this 2-core VM, loaded), where the interpreter runs the
# 1,000 in a few ms. Past COMPILE_MAX_STATEMENTS statements, a nest whose run is modeled
# under INTERPRET_MAX_OPS operations (about a second interpreted) runs interpreted
COMPILE_MAX_STATEMENTS, INTERPRET_MAX_OPS = 200, 1_000_000


def build(plan, nest):
    """(CompiledNest or None, how it runs): the compiled nest, called with the
    interpreter's namespace, returns its outputs; None means: interpret it."""
    mode = policy()
    if mode == "never":
        return None, "interpreted (EQSAT_COMPILE_LOOPS=never)"
    unbound = nest.unbound_reads | unset_read(plan, nest)
    if unbound:
        return None, (f"interpreted (it may read {', '.join(sorted(unbound))} unassigned, where Python raises "
                      f"UnboundLocalError; numba would read a zero)")
    if mode == "auto" and nest.work["nodes"] < COMPILE_MIN_OPS:
        return None, f"interpreted (under {COMPILE_MIN_OPS} operations: compiling would cost more)"
    statements = sum(isinstance(x, ast.stmt) for x in ast.walk(nest.stmt.node))
    if statements > COMPILE_MAX_STATEMENTS and nest.work["nodes"] < INTERPRET_MAX_OPS:
        return None, (f"interpreted ({statements} statements of under {INTERPRET_MAX_OPS} operations a run: numba "
                      f"would compile them for minutes)")
    try:
        import numba  # noqa: F401
    except ImportError:
        return None, "interpreted (numba is not installed)"
    src, names, params, par = _source(plan, nest)
    from eqsat.backends import vector_math

    scalar = vector_math.SCALAR
    calls = sum(src.count(f"{names[f'scalar:{k}']}(") for k in scalar if f"scalar:{k}" in names)
    if calls > INLINE_CALLS_MAX:  # (see INLINE_CALLS_MAX)
        scalar = vector_math.scalar_not_inlined()
    lib = {**_lib(), **{f"scalar:{k}": f for k, f in scalar.items()}}
    try:
        fn = load_compiled("nest", src, "nest", {names[n]: f for n, f in lib.items() if n in names},
                           lambda: [_example(plan, nest, p) for p in params])
    except Exception as e:  # noqa: BLE001 - any failure: run interpreted, and say why
        return None, f"interpreted (numba: {type(e).__name__}: {str(e).splitlines()[0][:120]})"
    how = f"compiled (numba; parallel loops: {', '.join(par)})" if par else "compiled (numba)"
    return CompiledNest(fn, params, list(nest.outputs), in_place(nest), bool(par)), how


def load_compiled(kind: str, src: str, entry: str, bind: dict, example):
    """Function `entry` of the generated module `src`, compiled: the module is written to the
    disk cache (`<kind>_<hash>.py`, where numba's own cache sits beside it), its globals in
    `bind` set, and `entry` called once on `example()` so that numba compiles it now and a
    failure raises here. Shared by every plan in the process (the least recently used are
    dropped past MAX_MODULES; a dropped one reloads from the disk cache)."""
    # (numba's cache of a function does not notice a change in the functions it calls: the
    # key holds the source of the compiled library too, so a new eqsat compiles anew)
    key = f"{kind}_{hashlib.sha256((src + _lib_source()).encode()).hexdigest()[:20]}"
    with _MODULES_LOCK:
        fn = _MODULES.get(key)
        if fn is not None:
            _MODULES.move_to_end(key)
            return fn
    path = cache_dir() / f"{key}.py"
    if not path.exists():
        path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"eqsat_{key}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    for name, value in bind.items():
        setattr(mod, name, value)
    fn = getattr(mod, entry)
    with quiet_numba():
        fn(*example())
    with _MODULES_LOCK:
        _MODULES[key] = fn
        while len(_MODULES) > MAX_MODULES:
            old, _ = _MODULES.popitem(last=False)
            sys.modules.pop(f"eqsat_{old}", None)
    return fn


@contextlib.contextmanager
def quiet_numba():
    """numba's performance warnings off while it compiles generated code (a loop it could
    not run in parallel is still correct; the user did not write this code)."""
    import warnings

    from numba.core.errors import NumbaPerformanceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        yield


class CompiledNest:
    """A nest compiled by numba: `fn(*params)` returns the outputs it does not update in
    place (`returned`, in order); a tensor parameter it writes is updated in its argument
    (the caller passes a copy), and returning it too would cost a boxing of the array on
    every call, a few microseconds that dominated small nests. Called with the
    interpreter's namespace it returns every output by name."""

    def __init__(self, fn, params: list, outputs: list, in_place: set, parallel: bool = False):
        self.params, self.outputs, self.parallel = params, outputs, parallel
        # what callers call: a nest with parallel loops enters numba's default thread pool,
        # which two threads must not enter at once (workqueue is not reentrant)
        self.fn = _one_at_a_time(fn) if parallel else fn
        self.returned = [o for o in outputs if o not in in_place]

    def __call__(self, ns: dict) -> dict:
        args = [ns[p] for p in self.params]
        out = {o: ns[o] for o in self.outputs if o not in self.returned}
        out.update(zip(self.returned, self.fn(*args)))
        return out


_PARALLEL_LOCK = threading.Lock()


def _one_at_a_time(fn):
    """`fn` (a numba function with parallel loops) entered by one thread at a time, with
    numba's threads or with one, whichever ran it faster lately (`_Threads`)."""
    threads = _Threads()

    def call(*args):
        with _PARALLEL_LOCK:
            return threads.run(fn, args)

    call.threads = threads
    return call


class _Threads:
    """How many threads a compiled function's parallel loops run on: all of numba's, or one.

    On a machine whose cores are busy with other processes, a parallel region waits for its
    workers to be scheduled: a 1M-element batchnorm took 8 ms on two threads against 0.3 ms
    on one, with one other busy process on this 2-core VM (numba's OpenMP layer; with more
    load, or another wait policy, the loser changes). So each function keeps a running
    average of its time either way, runs the faster, and tries the other every
    `EXPLORE` calls: on an idle machine the parallel loops keep their gain, on a busy one
    the function falls back to one thread within a few calls."""

    EXPLORE = 16

    def __init__(self):
        self.avg = [None, None]  # seconds a call, averaged: [all threads, one thread]
        self.calls = 0

    def pick(self) -> int:
        self.calls += 1
        par, one = self.avg
        if par is None:
            return 0
        if one is None:
            return 1
        best = 0 if par <= one else 1
        return 1 - best if self.calls % self.EXPLORE == 0 else best

    def run(self, fn, args):
        import numba

        mode = self.pick()
        n = numba.get_num_threads()
        if n <= 1:
            return fn(*args)
        if mode:
            numba.set_num_threads(1)
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            dt = time.perf_counter() - t0
            if mode:
                numba.set_num_threads(n)
            old = self.avg[mode]
            self.avg[mode] = dt if old is None else 0.5 * (old + dt)


def _with_prange(node, loops: list):
    """A copy of the nest's ast with the `range` of each loop in `loops` (ast.For nodes of
    `node`) replaced by `numba.prange`."""
    new = copy.deepcopy(node)
    want = {id(f) for f in loops}
    done = 0
    for old, cp in zip(ast.walk(node), ast.walk(new)):
        if id(old) in want:
            cp.iter.func = ast.Attribute(value=ast.Name(id="numba", ctx=ast.Load()), attr="prange",
                                         ctx=ast.Load())
            done += 1
    return new if done == len(want) else None  # a loop not found in this tree: none


def _scalar_calls(tree, types, lib_names: dict) -> set:
    """Calls of exp, log, tanh, ... whose argument is a float32 scalar (an element, a scalar
    local holding one, arithmetic of those: `scalar_types.Types`) renamed to
    `eqsat_scalar_<name>`, in place; returns the names so renamed. Those are bound to
    `vector_math.SCALAR`'s forms, which numba inlines, so the loop vectorizes; a call that
    may take an array keeps the function that takes either (`vector_math.FUNCTIONS`), which
    LLVM does not inline for tanh and gelu (a kept softmax or gelu loop ran the C library's
    tanh per element)."""
    from eqsat.backends import vector_math

    by_user = {user: canon for canon, user in lib_names.items()}
    out = set()
    for c in ast.walk(tree):
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in by_user and not c.keywords:
            canon = by_user[c.func.id]
            if canon in vector_math.SCALAR and len(c.args) == 1 and types.of(c.args[0]) == scalar_types.F32:
                c.func = ast.Name(id=f"eqsat_scalar_{canon}", ctx=ast.Load())
                out.add(canon)
    return out


def _types(tree, plan, nest, consts: dict, lib_names: dict, weak: set):
    """`scalar_types.Types` of a kept nest's tree: its tensors' ranks (views' too), its
    scalar inputs (float32, but those in `weak`: Python floats; the plan passes them so),
    sizes and module constants."""
    ranks = scalar_types.tensor_ranks(plan.lowered.tensor_shapes, nest.views)
    floats = {n: 0.0 for n in weak}  # (typed as module float constants are: Python floats)
    return scalar_types.Types(tree, ranks, [n for n in nest.scalar_inputs if n not in weak], plan.dims,
                              {**consts, **floats}, {user: canon for canon, user in lib_names.items()})


def _python_numbers(plan, nest) -> set:
    """The scalar inputs the reference holds as Python numbers (`numpy_backend.scalar_input`
    passes them so)."""
    from eqsat.terms import python_number, unlist

    term = plan.nest_terms.get(nest.id)
    if term is None:
        return set()
    return {n for n, s in zip(nest.scalar_inputs, unlist(term.args[3])) if python_number(s)}


def _float_powers(tree, types) -> None:
    """A numpy float64 to a negative int power (`(x[i] - C64) ** -2`, C64 a module's
    np.float64) with a float exponent, in place: numba's integer power of a float raises
    ZeroDivisionError at 0 whatever the error model, where numpy's gives inf (its float
    power does too). A Python float's stays: Python raises there, as the reference does."""
    for n in ast.walk(tree):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) and types.of(n.left) == scalar_types.F64:
            e = n.right
            sign = -1 if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) else 1
            e = e.operand if sign < 0 else e
            if isinstance(e, ast.Constant) and type(e.value) is int and sign * e.value < 0:
                n.right = ast.copy_location(ast.Constant(float(sign * e.value)), n.right)


def _library_dots(tree) -> None:
    """The dot products the desugaring writes as loops (`np.dot(L[i, :i], x[:i])`: `acc =
    0.0; for k in range(i): acc += L[i, k] * x[k]`, named `eqsat_sec*_dot`) made `np.dot` of
    the slices again, in place: numba calls BLAS for it, where the loop adds in order in
    float32 and does not vectorize (a triangular solve took 2x numba running the program
    as written, a probe's). The sum's order is BLAS's, as numpy's in the reference."""
    for n in ast.walk(tree):
        for field in ("body", "orelse"):
            stmts = getattr(n, field, None)
            if not isinstance(stmts, list):
                continue
            k = 0
            while k + 1 < len(stmts):
                got = _dot_of(stmts[k], stmts[k + 1])
                if got is not None:
                    stmts[k:k + 2] = [ast.copy_location(got, stmts[k])]
                k += 1
    ast.fix_missing_locations(tree)


def _dot_of(init, loop):
    """`acc = np.dot(x[..], y[..])` for a desugared dot product's two statements, else None."""
    if not (isinstance(init, ast.Assign) and len(init.targets) == 1 and isinstance(init.targets[0], ast.Name)):
        return None
    acc = init.targets[0].id
    if not (acc.startswith("eqsat_sec") and acc.endswith("_dot") and _is_zero(init.value)):
        return None
    if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and not loop.orelse and
            len(loop.body) == 1 and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) and
            loop.iter.func.id == "range" and len(loop.iter.args) == 1 and not loop.iter.keywords):
        return None
    step, k, extent = loop.body[0], loop.target.id, loop.iter.args[0]
    if not (isinstance(step, ast.AugAssign) and isinstance(step.op, ast.Add) and isinstance(step.target, ast.Name)
            and step.target.id == acc and isinstance(step.value, ast.BinOp) and isinstance(step.value.op, ast.Mult)):
        return None
    if any(isinstance(x, ast.Name) and x.id == k for x in ast.walk(extent)):
        return None
    slices = [_sliced(x, k, extent) for x in (step.value.left, step.value.right)]
    if None in slices:
        return None
    dot = ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()), attr="dot", ctx=ast.Load()),
                   args=slices, keywords=[])
    f32 = ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()), attr="float32", ctx=ast.Load())
    return ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())], value=ast.Call(func=f32, args=[dot], keywords=[]))


def _is_zero(e) -> bool:
    if isinstance(e, ast.Call) and len(e.args) == 1 and not e.keywords:  # (`np.float32(0.0)`)
        e = e.args[0]
    return isinstance(e, ast.Constant) and e.value == 0 and type(e.value) in (int, float)


def _sliced(x, k: str, extent):
    """`x[.., c + k, ..]` (an element at the loop's variable on one axis) as the slice
    `x[.., c:c + max(extent, 0), ..]` of the elements the loop reads; None for anything else."""
    if not (isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name)):
        return None
    parts = list(x.slice.elts) if isinstance(x.slice, ast.Tuple) else [x.slice]
    at = [p for p, e in enumerate(parts) if any(isinstance(n, ast.Name) and n.id == k for n in ast.walk(e))]
    if len(at) != 1 or any(isinstance(e, ast.Slice) for e in parts):
        return None
    e = parts[at[0]]
    if isinstance(e, ast.Name):
        start = None
    elif isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and \
            any(isinstance(s, ast.Name) and s.id == k for s in (e.left, e.right)):
        start = e.right if isinstance(e.left, ast.Name) and e.left.id == k else e.left
        if any(isinstance(n, ast.Name) and n.id == k for n in ast.walk(start)):
            return None
    else:
        return None
    count = ast.Call(func=ast.Name(id="max", ctx=ast.Load()), args=[copy.deepcopy(extent), ast.Constant(0)],
                     keywords=[])
    stop = count if start is None else ast.BinOp(left=copy.deepcopy(start), op=ast.Add(), right=count)
    parts[at[0]] = ast.Slice(lower=copy.deepcopy(start), upper=stop, step=None)
    index = ast.Tuple(elts=parts, ctx=ast.Load()) if len(parts) > 1 else parts[0]
    return ast.Subscript(value=x.value, slice=index, ctx=ast.Load())


def _overlap_safe(tree, shapes: dict, views) -> None:
    """Every augmented assignment to a tensor (`a -= a[0]`, `r[i] += r[0]` for a row `r[i]`)
    rewritten as a store of the whole result (`a[...] = a - a[0]`), in place. numpy computes
    an in-place operation as if its operands were copied first where they overlap; numba's
    runs element by element, so `a -= a[0]` subtracted the already zeroed first row from
    the rest."""
    for n in ast.walk(tree):
        for field in ("body", "orelse"):
            stmts = getattr(n, field, None)
            if not isinstance(stmts, list):
                continue
            for k, st in enumerate(stmts):
                if not isinstance(st, ast.AugAssign):
                    continue
                t = st.target
                if isinstance(t, ast.Name):
                    whole = t.id in views or len(shapes.get(t.id) or ()) > 0
                    store = ast.Subscript(value=ast.Name(id=t.id, ctx=ast.Load()), slice=ast.Constant(Ellipsis),
                                          ctx=ast.Store())
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    idx = t.slice.elts if isinstance(t.slice, ast.Tuple) else [t.slice]
                    whole = len(shapes.get(t.value.id) or ()) > len(idx)  # a row, not an element
                    store = copy.deepcopy(t)
                else:
                    whole = False
                if not whole:
                    continue
                load = copy.deepcopy(t)
                load.ctx = ast.Load()
                for x in ast.walk(load):
                    if hasattr(x, "ctx"):
                        x.ctx = ast.Load()
                stmts[k] = ast.copy_location(ast.Assign(targets=[store], value=ast.BinOp(load, st.op, st.value)), st)
    ast.fix_missing_locations(tree)


def _unsigned_indices(tree) -> None:
    """Every index of a parallel nest made unsigned (`a[np.uint64(i - 1)]`), in place. Inside
    a `numba.prange` loop numba cannot tell that `i - 1` is not negative, so it keeps the
    check that wraps a negative index around, and the loop does not vectorize (a first
    difference over 1M elements: 0.32 ms against 0.07). Every index of a program is proven
    inside its tensor before it runs (`eqsat/bounds.py`), so none is negative."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(p, ast.Slice) for p in parts):
            continue
        wrapped = [ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()), attr="uint64",
                                               ctx=ast.Load()), args=[p], keywords=[]) for p in parts]
        node.slice = ast.Tuple(elts=wrapped, ctx=ast.Load()) if isinstance(node.slice, ast.Tuple) else wrapped[0]


def _source(plan, nest):
    """The nest as a module: sizes and constants as globals, one function `nest`."""
    prog = plan.program
    node = nest.stmt.node
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    params = list(nest.tensor_inputs) + list(nest.scalar_inputs) + sorted(v for v in nest.views if v in used)
    lines = ["import numba", "import numpy as np", ""]
    for d, v in sorted(plan.dims.items()):
        if d in used:
            lines.append(f"{d} = {int(v)}")
    lib_names = {}  # canonical library name -> the name the user's code calls it by
    consts = {}  # module constants the nest reads
    g = {**prog.fn.__globals__, **prog.constants}  # (the constants as optimize() read them)
    for name in sorted(used - set(params) - set(plan.dims)):
        got = scalar_types.resolve(name, g.get(name))
        if got is None:
            continue
        kind, value = got
        if kind == "lib":
            lib_names[value] = name
            lines.append(f"{name} = None  # bound to the compiled {value} on load")
        elif isinstance(value, (np.float32, np.float64)):  # (a numpy scalar keeps its type, as numpy's)
            lines.append(f"{name} = np.{type(value).__name__}({float(value)!r})")
            consts[name] = value
        else:
            lines.append(f"{name} = {value!r}")
            consts[name] = value
    live = live_outputs(plan, nest)
    weak = _python_numbers(plan, nest)
    par = parallel_loops(nest.stmt, plan.dims, plan.lowered.tensor_shapes, nest.views, live)
    if par and _array_arithmetic(node, _types(copy.deepcopy(node), plan, nest, consts, lib_names, weak)):
        par = []
    marked = _with_prange(node, par) if par else None
    if marked is None:
        par = []
    else:
        _unsigned_indices(marked)
    # what it returns: with parallel loops, a name nothing reads afterwards is private to
    # them (`parallel.parallel_loops`), and numba refuses to return a loop-private name (a
    # per-channel `scale` of a batchnorm made the nest run interpreted): a zero stands in
    # The same for eqsat's own temporaries nothing reads afterwards: the front end's for a
    # tuple assignment is no name of the source the nest runs, and a ping-pong copy's may be
    # bound on a branch only (numba then cannot type it: the nest ran interpreted)
    outs = "".join(f"{o if o in live or not (par or o.startswith('eqsat_')) else _zero(plan, o)}, "
                   for o in nest.outputs if o not in in_place(nest))
    tree = marked if par else copy.deepcopy(node)
    desugar.clamped(tree, set(plan.dims))  # (bounds desugar widened to a guard, clamped again)
    _overlap_safe(tree, plan.lowered.tensor_shapes, nest.views)
    scalar_types.fold_sizes(tree, plan.dims)  # (`N ** n / N ** (n - 1)`: Python's exact ints, here)
    types = _types(tree, plan, nest, consts, lib_names, weak)
    scalar_types.exact_ints(tree, types, plan.dims)  # integer arithmetic meeting a float as Python's
    scalar_types.cast_weak(tree, types)  # Python numbers meeting float32 as the reference has them
    _float_powers(tree, types)
    _library_dots(tree)
    for canon in sorted(_scalar_calls(tree, types, lib_names)):
        lib_names[f"scalar:{canon}"] = f"eqsat_scalar_{canon}"
        lines.append(f"eqsat_scalar_{canon} = None  # bound to the compiled scalar {canon} on load")
    body = ast.unparse(tree)
    flags = ', parallel=True' if par else ''
    lines += ["", "", f'@numba.njit(cache=True, error_model="numpy"{flags})', f"def nest({', '.join(params)}):"]
    # a Python-float input the nest makes float32 (`acc += x[i]`) is one from the start: a
    # numba variable has one type (the reference's is a float64 until that statement)
    lines += [f"    {n} = np.float32({n})" for n in sorted(weak) if types.env.get(n) == scalar_types.F32]
    lines += [f"    {n} = np.empty({tuple(shape)!r}, dtype=np.float32)" for n, shape in nest.allocates.items()]
    lines += ["    " + line for line in body.splitlines()]
    lines.append(f"    return ({outs})")
    return "\n".join(lines) + "\n", lib_names, params, [f.target.id for f in par]


def _array_arithmetic(tree, types) -> bool:
    """Whether the nest computes elementwise arithmetic of two arrays (`s - m`, `maximum(a,
    b)`). numba's parallel mode turns every such expression of the function into a parallel
    loop of its own that assumes equal extents: where one operand stretches an axis of
    extent 1 over the other (`s - m` with m of shape (S, 1), a softmax's keepdims max) it
    read past m's row and returned wrong values silently, or failed an assertion (numba
    0.6x; tests/test_parallel_loops.py). Such a nest is compiled without parallel loops."""
    binary = {user for user, canon in types.lib.items() if canon in lang.BINARY}
    for e in ast.walk(tree):
        if isinstance(e, ast.BinOp) and not isinstance(e.op, ast.MatMult):
            pair = (e.left, e.right)
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in binary and len(e.args) == 2:
            pair = tuple(e.args)
        else:
            continue
        if all(types.of(x) == scalar_types.ARRAY for x in pair):
            return True
    return False


def _zero(plan, name: str) -> str:
    """A float32 zero of `name`'s shape, as nest source."""
    shape = plan.lowered.tensor_shapes.get(name)
    return "np.float32(0.0)" if not shape else f"np.zeros({tuple(int(d) for d in shape)!r}, dtype=np.float32)"


def unset_read(plan, nest) -> set:
    """The outputs a run of the nest may leave unassigned that the plan reads afterwards
    (whether they are assigned then depends on the data)."""
    return nest.unset_outputs & live_outputs(plan, nest) if nest.unset_outputs else set()


def live_outputs(plan, nest) -> set:
    """The names the nest writes that the plan reads afterwards (its `Ten.opaque` outputs
    that some kernel or root uses)."""
    from eqsat.terms import walk

    seen: set = set()
    out = set()
    for r in plan.roots:
        for n in walk(r, seen):
            if n.op == "Ten.opaque" and n.args[0] == nest.id:
                out.add(n.args[1])
    return out


def in_place(nest) -> set:
    """The outputs a compiled nest updates in its arguments: its tensor inputs (scalars are
    values, and a tensor it allocates is new), but those it binds anew (`y = y + x`: the
    name then holds another array, which the nest must return; taking the argument for it
    returned the tensor as it was before the loop)."""
    return set(nest.outputs) & set(nest.tensor_inputs) - _rebound(nest.stmt.node)


def _rebound(node) -> set:
    """Names a statement binds with `=` (its element stores and augmented assignments
    update the array the name holds; `=` and `:=` make the name hold another one)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                for x in ast.walk(t):
                    if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store):
                        out.add(x.id)
        elif isinstance(n, ast.NamedExpr):
            out.add(n.target.id)
    return out


def _example(plan, nest, name):
    """A zero argument of the right type and shape, to compile (and check) a nest once."""
    if name in nest.scalar_inputs:
        return 0.0 if name in _python_numbers(plan, nest) else np.float32(0)
    if name in nest.views:
        from eqsat.backends.numpy_backend import _view

        ns = {n: np.zeros(plan.lowered.tensor_shapes[n], dtype=np.float32) for n in nest.tensor_inputs}
        return _view(nest.views[name], ns, plan.dims)
    return np.zeros(plan.lowered.tensor_shapes[name], dtype=np.float32)
