"""Exact value-based dataflow of one loop nest (isl: Feautrier's last-writer relation).

The lowering builds a nest's functional form by running it symbolically, one generic
iteration at a time. Every read it makes is a *claim*: "this read sees the value that
statement W wrote at the instance matching mine (same iteration of the loops W's value is
private to, same element), or the last such instance" -- or "the value from before the
nest". This module states claims as isl relations and compares each with the exact last
writer of every instance of that read, computed by isl's dataflow analysis over the
nest's concrete iteration domains (shapes are known at optimize time, so nothing is
approximated). A nest whose claims all hold has exactly the functional form built; one
difference and the nest stays as written.

Model: every leaf statement (store, assignment, allocation) is a space `S<n>[L0, L1, ...]`
over its enclosing loops; a location is `b_<name>[e0, ...]` (a scalar is 0-d). Each read is
its own sink space `R<n>[L..., e...]`, one instance per element it reads (a whole-tensor or
slice read has free axes `e`), scheduled just before the writes of its statement instance.
`F_<name>[e...]` reads every element after the nest: its last writer is the final value.
"""
from __future__ import annotations

import contextlib
import re

from dataclasses import dataclass, field

import threading

import islpy as isl

from .ir import Alloc, Assign, For, If, Index, Ref, Store, ie_eval, ie_names


@dataclass(eq=False)
class Leaf:
    sid: int
    stmt: object
    path: tuple  # enclosing ir.For objects inside the nest, outermost first
    pos: tuple  # textual position at each level (len(path) + 1)


@dataclass(eq=False)
class Read:
    rid: int
    leaf: Leaf
    name: str
    idx: tuple  # IExprs of the leading axes
    space: str = field(default="")


class Conditional(Exception):
    """The nest holds an `if`: its writes are conditional (kept as written for now)."""


class Mismatch(Exception):
    """A claim differs from the exact last writer."""


_THREAD = threading.local()


def _ascii(text: str) -> str:
    """`text` with every name that is not ASCII (Python allows `ξ`, isl's parser does not)
    spelled `eqsat_u_<its UTF-8 bytes in hex>` (a prefix the front end reserves)."""
    if text.isascii():
        return text
    return re.sub(r"\w+", lambda m: m.group() if m.group().isascii() else "eqsat_u_" + m.group().encode().hex(), text)


def context() -> isl.Context:
    """This thread's isl context. One per thread, kept: isl contexts may not be shared
    between threads, and each new one leaves about 2 KB behind when dropped (islpy 2026.2),
    which made every optimize() call grow the process by tens of KB."""
    ctx = getattr(_THREAD, "ctx", None)
    if ctx is None:
        ctx = _THREAD.ctx = isl.Context()
    return ctx


_PARSE_CACHE_SIZE = 4096
_FLOW_CACHE_SIZE = 1024  # solved flow problems kept per thread (a chain's alike layers need a few)


def _flow_cache() -> dict:
    """This thread's solved flow problems (`NestFlow._flow`), by their text up to the name."""
    cache = getattr(_THREAD, "flows", None)
    if cache is None:
        context()
        cache = _THREAD.flows = {}
    return cache


def _parse_cache() -> dict:
    """This thread's parsed isl maps by their text (for this thread's context only)."""
    cache = getattr(_THREAD, "parsed", None)
    if cache is None:
        context()
        cache = _THREAD.parsed = {}
    return cache


@contextlib.contextmanager
def operation_quota(ops: float | None):
    """isl's operations on this thread's context bounded by `ops` for the duration (None:
    unbounded): an isl call past it fails with isl.Error, which every analysis here takes
    as "cannot prove" (`quota_spent` tells the two apart). The bound and count before are
    restored after (a nested quota restarts the count of the one around it)."""
    if ops is None:
        yield
        return
    ctx = context()
    before = ctx.get_max_operations()
    ctx.set_max_operations(max(1, int(min(ops, 2.0**62))))  # (0 would mean no bound; isl's is 64-bit)
    ctx.reset_operations()
    try:
        yield
    finally:
        ctx.set_max_operations(before)
        ctx.reset_operations()


def quota_spent() -> bool:
    """Whether this thread's isl quota is spent: a trivial operation fails then (a failure
    of the analysis itself leaves isl working)."""
    try:
        isl.Set.read_from_str(context(), "{ [i] : 0 <= i < 2 }").is_empty()
    except isl.Error:
        return True
    return False


class NestFlow:
    """The nest's statements, accesses and schedule as isl objects, and the claim checks."""

    def __init__(self, nest, dims: dict, shapes: dict, scalars: set, ifs_as_leaves: bool = False):
        """`ifs_as_leaves`: an `if` holding no loop is one leaf that may read and write what
        its branches do (enough to order statements for fission, `order_edges`; the exact
        claim checks need every statement's own instances and refuse a conditional)."""
        self.dims, self.shapes, self.scalars = dims, shapes, scalars
        self.ifs_as_leaves = ifs_as_leaves
        self.leaves: list[Leaf] = []
        self.by_stmt: dict = {}
        self.reads: dict = {}  # (id(leaf stmt), key) -> Read
        self.depth = 0
        self._walk(nest, (), (0,))
        self.ctx = context()
        self.width = 2 * self.depth + 2
        self._sched: list[str] = []
        self._writes: dict = {}  # location -> [isl map str]
        for leaf in self.leaves:
            self._sched.append(self._sched_str(leaf, f"S{leaf.sid}", self._lvars(leaf), 1))
            for name, acc in self._leaf_accesses(leaf, _writes(leaf.stmt)):
                self._writes.setdefault(name, []).append(acc)
        self._exact: dict = {}
        self._final: dict = {}

    # ------------------------------------------------------------------ model
    def _walk(self, s, path, pos):
        if isinstance(s, If) and not (self.ifs_as_leaves and not _holds_loop(s)):
            raise Conditional("a conditional inside the nest")
        if isinstance(s, For):
            self.depth = max(self.depth, len(path) + 1)
            for k, b in enumerate(s.body):
                self._walk(b, path + (s,), pos + (k,))
            return
        leaf = Leaf(len(self.leaves), s, path, pos)
        self.leaves.append(leaf)
        self.by_stmt[id(s)] = leaf
        for key, name, idx in _reads(s):
            # one read per node: a node the statement holds at several places (numpy's
            # maximum reads its operand in the NaN tests and in the max) is one read; made
            # again it took the number of the next statement's read, and the two reads'
            # exact writers were merged (a false loop-carried dependence)
            if (id(s), key) not in self.reads:
                self.reads[(id(s), key)] = Read(len(self.reads), leaf, name, idx)

    def _lvars(self, leaf) -> list:
        return [f"L{d}" for d in range(len(leaf.path))]

    def _aff(self, leaf, e) -> str:
        """An index expression in isl syntax (quasi-affine: `//` and `%` by constants)."""
        names = {f.var: f"L{d}" for d, f in enumerate(leaf.path)}
        tag = e[0]
        if tag == "int":
            return f"({e[1]})"
        if tag == "name":
            return names[e[1]] if e[1] in names else f"({self.dims[e[1]]})"
        if tag == "neg":
            return f"(-{self._aff(leaf, e[1])})"
        if tag == "mul":  # affine: one side is constant (the front end checks it)
            for c, x in ((e[1], e[2]), (e[2], e[1])):
                if not (ie_names(c) - set(self.dims)):
                    return f"({ie_eval(c, self.dims)} * {self._aff(leaf, x)})"
        a, b = self._aff(leaf, e[1]), self._aff(leaf, e[2])
        if tag == "floordiv":
            return f"floor({a} / {ie_eval(e[2], self.dims)})"
        if tag == "mod":
            return f"({a} mod {ie_eval(e[2], self.dims)})"
        return f"({a} {dict(add='+', sub='-', mul='*')[tag]} {b})"

    def _dom(self, leaf) -> str:
        cons = []
        for d, f in enumerate(leaf.path):
            # a loop widened to its hull (ifconvert._widen) keeps its own bounds here: the
            # instances outside them are predicated no-ops, so the dataflow is the original's
            lo_e, hi_e = getattr(f, "exact_bounds", (f.lo, f.hi))
            lo, hi = self._aff(leaf, lo_e), self._aff(leaf, hi_e)
            if f.step > 0:
                cons.append(f"{lo} <= L{d} < {hi}")
                if f.step > 1:
                    cons.append(f"(L{d} - {lo}) mod {f.step} = 0")
            else:
                cons.append(f"{hi} < L{d} <= {lo}")
                if f.step < -1:
                    cons.append(f"({lo} - L{d}) mod {-f.step} = 0")
        return " and ".join(cons) or "true"

    def _sched_str(self, leaf, space, extra_vars, phase, band=(), perm=()) -> str:
        """`band`, `perm`: the schedule with the perfectly nested loops `band` run in the order
        `perm` (new level k runs band[perm[k]]), for leaves inside the band."""
        at = {}
        if band and band[0] in leaf.path:
            d0 = leaf.path.index(band[0])
            at = {d0 + k: d0 + p for k, p in enumerate(perm)}
        out = []
        for d in range(self.depth + 1):
            out.append(str(leaf.pos[d]) if d < len(leaf.pos) else "0")
            if d < self.depth:
                if d < len(leaf.path):  # a downward loop runs its values in decreasing order
                    e = at.get(d, d)
                    out.append(f"L{e}" if leaf.path[e].step > 0 else f"-L{e}")
                else:
                    out.append("0")
        out.append(str(phase))
        dims = ", ".join(self._lvars(leaf) + extra_vars[len(leaf.path):])
        return f"{{ {space}[{dims}] -> [{', '.join(out)}] : {self._dom(leaf)} }}"

    def _access(self, leaf, space, vars_, name, idx, free) -> str:
        """{ space[vars] -> b_name[...] }: the leading axes indexed, the rest free (or `free`)."""
        shape = self.shapes.get(name, ())
        es = [f"e{a}" for a in range(len(shape))]
        cons = [f"{es[a]} = {self._aff(leaf, ix)}" for a, ix in enumerate(idx)]
        for a in range(len(idx), len(shape)):
            cons.append(f"0 <= {es[a]} < {shape[a]}")
        if free:  # a read's free axes are dims of its sink space
            cons += [f"{es[len(idx) + a]} = {v}" for a, v in enumerate(free)]
        cons.append(self._dom(leaf))
        return f"{{ {space}[{', '.join(vars_)}] -> b_{name}[{', '.join(es)}] : {' and '.join(cons)} }}"

    def _leaf_accesses(self, leaf, accesses) -> list:
        """(location, isl access of the leaf's statement space) for (location, index) pairs."""
        return [(n, self._access(leaf, f"S{leaf.sid}", self._lvars(leaf), n, idx, [])) for n, idx in accesses]

    def _same_element(self, sink_acc: str, wleaf, name: str) -> isl.UnionMap:
        """sink instance -> every instance of wleaf writing an element the sink reads."""
        wacc = [a for n, a in self._leaf_accesses(wleaf, _writes(wleaf.stmt)) if n == name]
        return self._union([sink_acc]).apply_range(self._union(wacc).reverse())

    def _read_space(self, r: Read, band=(), perm=()):
        leaf = r.leaf
        nfree = len(self.shapes.get(r.name, ())) - len(r.idx)
        free = [f"f{a}" for a in range(nfree)]
        space = f"R{r.rid}"
        acc = self._access(leaf, space, self._lvars(leaf) + free, r.name, r.idx, free)
        sched = self._sched_str(leaf, space, self._lvars(leaf) + free, 0, band, perm)
        return acc, sched

    def covers(self, name: str) -> bool:
        """Whether the nest's stores into tensor `name` write every element of it, for the
        sizes given (exactly: the union of the stores' images contains the whole box)."""
        shape = self.shapes.get(name, ())
        if not shape or name not in self._writes:
            return False
        es = ", ".join(f"f{a}" for a in range(len(shape)))
        bounds = " and ".join(f"0 <= f{a} < {n}" for a, n in enumerate(shape))
        box = isl.UnionSet.read_from_str(self.ctx, _ascii(f"{{ b_{name}[{es}] : {bounds} }}"))
        return box.is_subset(self._union(self._writes[name]).range())

    def _final_space(self, name: str):
        """A sink reading every element of `name` after the nest (its last writer: the final value)."""
        shape = self.shapes.get(name, ())
        es = [f"f{a}" for a in range(len(shape))]
        bounds = " and ".join(f"0 <= f{a} < {n}" for a, n in enumerate(shape)) or "true"
        acc = f"{{ F_{name}[{', '.join(es)}] -> b_{name}[{', '.join(es)}] : {bounds} }}"
        sched = f"{{ F_{name}[{', '.join(es)}] -> [{', '.join(['1000000'] + ['0'] * (self.width - 1))}] }}"
        return acc, sched

    def _union(self, strs) -> isl.UnionMap:
        """The union of maps written `{ ... }`, parsed as one (isl parses a union of pieces
        separated by `;`), and kept per thread: the nests of one program, and the programs
        of a process, state the same accesses and domains again and again (isl objects are
        values: operations return new ones)."""
        key = tuple(strs)
        cache = _parse_cache()
        got = cache.get(key)
        if got is not None:
            return got
        pieces = [s.strip() for s in strs]
        if all(p.startswith("{") and p.endswith("}") for p in pieces):
            got = isl.UnionMap.read_from_str(self.ctx, _ascii("{ " + "; ".join(p[1:-1] for p in pieces) + " }"))
        else:
            got = isl.UnionMap.read_from_str(self.ctx, "{ }")
            for s in strs:
                got = got.union(isl.UnionMap.read_from_str(self.ctx, _ascii(s)))
        if len(cache) >= _PARSE_CACHE_SIZE:
            cache.clear()
        cache[key] = got
        return got

    def _parsed(self, key, strs) -> isl.UnionMap:
        """`_union(strs)`, parsed once per nest (every read's analysis needs the whole
        schedule and the location's writes: parsing them per read is quadratic)."""
        cache = self.__dict__.setdefault("_parsed_cache", {})
        got = cache.get(key)
        if got is None:
            got = cache[key] = self._union(strs)
        return got

    def _flow(self, sink_accs: list, sink_scheds: list, name: str, sched=None) -> isl.UnionMap:
        """sink instance -> its exact last writer (instances with none are absent), for every
        sink of location `name` in one isl problem, under the nest's schedule or `sched` (the
        statements' parsed schedule of a reordered nest)."""
        sources = self._writes.get(name, [])
        if not sources:
            return self._union([])
        key = None
        if sched is None and not any(f"F_{name}[" in a for a in sink_accs):
            # the same problem up to the location's name (a chain of layers: every nest
            # alike, each on its own tensors): solved once per thread. The answer names
            # statement instances only, so it holds for every name; final-value sinks
            # (`F_<name>`) carry the name into the answer and are not shared.
            tag = f"b_{name}["
            key = (tuple(a.replace(tag, "b_[") for a in sink_accs), tuple(sink_scheds),
                   tuple(a.replace(tag, "b_[") for a in sources), tuple(self._sched))
            cache = _flow_cache()
            got = cache.get(key)
            if got is not None:
                return got
        info = isl.UnionAccessInfo.from_sink(self._union(sink_accs))
        info = info.set_must_source(self._parsed(("writes", name), sources))
        whole = self._parsed(("sched",), self._sched) if sched is None else sched
        info = info.set_schedule_map(whole.union(self._union(sink_scheds)))
        out = info.compute_flow().get_must_dependence().reverse()
        if key is not None:
            if len(cache) >= _FLOW_CACHE_SIZE:
                cache.clear()
            cache[key] = out
        return out

    # ------------------------------------------------------------------ fission
    def order_edges(self, skip=frozenset()) -> set:
        """(a, b) leaf ids where some instance of leaf a runs before an instance of leaf b
        that touches the same location, one of the two writing it: a dependence that any
        distribution of the nest must keep in that order. The names in `skip` are left
        out (scalars the caller expands into one location per iteration, eqsat/expand.py;
        the caller orders their statements itself)."""
        acc_r, acc_w = {}, {}
        for leaf in self.leaves:
            acc_w[leaf.sid] = self._union([a for _, a in self._leaf_accesses(
                leaf, [(n, idx) for n, idx in _writes(leaf.stmt) if n not in skip])])
            acc_r[leaf.sid] = self._union([a for _, a in self._leaf_accesses(
                leaf, [(n, idx) for _, n, idx in _reads(leaf.stmt) if n not in skip])])
        sched = self._union(self._sched)
        before = sched.lex_lt_union_map(sched)
        edges = set()
        for a in self.leaves:
            for b in self.leaves[a.sid + 1:]:
                wa, ra, wb, rb = acc_w[a.sid], acc_r[a.sid], acc_w[b.sid], acc_r[b.sid]
                conflict = wb.apply_range(wa.union(ra).reverse()).union(rb.apply_range(wa.reverse()))  # b -> a
                if not conflict.intersect(before).is_empty():
                    edges.add((b.sid, a.sid))
                if not conflict.reverse().intersect(before).is_empty():
                    edges.add((a.sid, b.sid))
        return edges

    # ------------------------------------------------------------------ interchange
    def reorder_legal(self, band: list, perm: list) -> bool:
        """Whether running the perfectly nested loops `band` (ir.For objects of this nest,
        outermost first) in the order `perm` is the same program, value for value: every
        read instance has the same exact last writer under both orders, and so has every
        location at the end (a scalar private to each iteration does not constrain)."""
        inside = [leaf for leaf in self.leaves if band[0] in leaf.path]
        if not inside or any(leaf.path[leaf.path.index(band[0]):][:len(band)] != tuple(band) for leaf in inside):
            return False  # not a perfectly nested band of this nest
        band, perm = tuple(band), tuple(perm)
        new = self._union([self._sched_str(leaf, f"S{leaf.sid}", self._lvars(leaf), 1, band, perm)
                           for leaf in self.leaves])
        for name in {r.name for r in self.reads.values()}:
            reads = [r for r in self.reads.values() if r.name == name]
            old = self._union([])
            for r in reads:  # the nest's own flows: computed once, shared with the claim checks
                old = old.union(self._exact_of(r)[0])
            spaces = [self._read_space(r, band, perm) for r in reads]
            if not old.is_equal(self._flow([a for a, _ in spaces], [s_ for _, s_ in spaces], name, new)):
                return False
        for name in self._writes:
            acc, sched = self._final_space(name)
            if not self._flow([acc], [sched], name).is_equal(self._flow([acc], [sched], name, new)):
                return False
        return True

    # ------------------------------------------------------------------ claims
    def exact_read(self, stmt, key):
        """The read's exact last writers, computed for every read of its location in one
        isl call (one dataflow problem per location, not per read) and split per read."""
        r = self.reads[(id(stmt), key)]
        return r, self._exact_of(r)

    def _exact_of(self, r: Read) -> tuple:
        """(exact last-writer relation, sink access) of read `r`."""
        if r.rid not in self._exact:
            same = [x for x in self.reads.values() if x.name == r.name and x.rid not in self._exact]
            spaces = [self._read_space(x) for x in same]
            flow = self._flow([a for a, _ in spaces], [s_ for _, s_ in spaces], r.name)
            for x, (acc, _) in zip(same, spaces):
                self._exact[x.rid] = (flow.intersect_domain(self._union([acc]).domain()), acc)
        return self._exact[r.rid]

    def claim(self, src, sink_acc: str, sink_path: tuple, nfree_sink: int) -> isl.UnionMap:
        """The relation a state entry claims: sink -> the last instance of W writing the same
        element in the same iteration of the loops W's value is private to."""
        if src is None:
            return self._union([])
        wleaf = self.by_stmt[id(src.stmt)]
        rel = self._same_element(sink_acc, wleaf, src.name)
        if src.free:
            svars = [f"L{d}" for d in range(len(sink_path))] + [f"f{a}" for a in range(nfree_sink)]
            wvars = [f"M{d}" for d in range(len(wleaf.path))]
            eqs = []
            for f in src.free:
                eqs.append(f"M{wleaf.path.index(f)} = L{sink_path.index(f)}")
            rel = rel.intersect(self._union([f"{{ {self._space_of(sink_acc)}[{', '.join(svars)}] -> "
                                             f"S{wleaf.sid}[{', '.join(wvars)}] : {' and '.join(eqs)} }}"]))
        out = self._last(rel, wleaf)
        prev = src.prev
        if prev is not None and all(f in sink_path for f in prev.free):
            # a guarded store (a loop widened to its hull) writes part of the elements, a
            # reduction over a range that may be empty none: the rest keep the value before
            rest = self.claim(prev, sink_acc, sink_path, nfree_sink)
            out = out.union(rest.subtract_domain(out.domain()))
        return out

    def _last(self, rel, wleaf) -> isl.UnionMap:
        """Per sink instance, the source instance that runs last (downward loops flipped)."""
        down = [d for d, f in enumerate(wleaf.path) if f.step < 0]
        if not down:
            return rel.lexmax()
        ms = [f"M{d}" for d in range(len(wleaf.path))]
        flipped = [f"-M{d}" if d in down else f"M{d}" for d in range(len(wleaf.path))]
        flip = self._union([f"{{ S{wleaf.sid}[{', '.join(ms)}] -> S{wleaf.sid}[{', '.join(flipped)}] }}"])
        return rel.apply_range(flip).lexmax().apply_range(flip)

    @staticmethod
    def _space_of(acc: str) -> str:
        return acc.split("{", 1)[1].split("[", 1)[0].strip()

    def check_read(self, stmt, key, src, self_chain=None):
        """Raise Mismatch unless the read's exact last writers are what `src` claims.

        `self_chain`: the read is an accumulation's own read (a reduction over the loops in
        it): each instance claims its lexicographic predecessor in those loops, and the first
        claims `src`.
        """
        r, (exact, acc) = self.exact_read(stmt, key)
        nfree = len(self.shapes.get(r.name, ())) - len(r.idx)
        claimed = self.claim(src, acc, r.leaf.path, nfree)
        if self_chain is not None:
            chain = self._self_chain(r, acc, self_chain)
            first = self._union([acc]).domain().subtract(chain.domain())
            claimed = chain.union(claimed.intersect_domain(first))
        if not exact.is_equal(claimed):
            raise Mismatch(f"{r.name!r} at line {getattr(stmt.loc, 'line', '?')} reads a value written in "
                           "another iteration (a loop-carried dependence)")

    def _self_chain(self, r: Read, acc: str, red_loops) -> isl.UnionMap:
        leaf = r.leaf
        rel = self._same_element(acc, leaf, r.name)
        n = len(leaf.path)
        red = [leaf.path.index(f) for f in red_loops]
        eqs = [f"M{d} = L{d}" for d in range(n) if d not in red]
        lex = []
        for k, d in enumerate(red):
            same = [f"M{e} = L{e}" for e in red[:k]]
            before = "<" if leaf.path[d].step > 0 else ">"
            lex.append("(" + " and ".join(same + [f"M{d} {before} L{d}"]) + ")")
        cons = eqs + ["(" + " or ".join(lex) + ")"] if lex else eqs + ["false"]
        # (a row read whole, `c[i, :] += ...`, has its free axes as dims of the sink space)
        nfree = len(self.shapes.get(r.name, ())) - len(r.idx)
        lv = ", ".join([f"L{d}" for d in range(n)] + [f"f{a}" for a in range(nfree)])
        mv = ", ".join(f"M{d}" for d in range(n))
        rel = rel.intersect(self._union([f"{{ R{r.rid}[{lv}] -> S{leaf.sid}[{mv}] : {' and '.join(cons)} }}"]))
        return self._last(rel, leaf)

    def check_final(self, name, src):
        """Raise Mismatch unless every element's last writer in the nest is what `src` claims."""
        shape = self.shapes.get(name, ())
        acc, sched = self._final_space(name)
        exact = self._flow([acc], [sched], name)
        claimed = self.claim(src, acc, (), len(shape))
        if not exact.is_equal(claimed):
            raise Mismatch(f"the final value of {name!r} is not the one the nest's functional form gives "
                           "(another write overwrites it)")


@dataclass(frozen=True, eq=False)
class Source:
    """A state entry's origin: `stmt` wrote `name`; its value is private to the loops `free`."""

    stmt: object
    name: str
    free: tuple
    prev: "Source | None" = None  # where `stmt` has no instance (a guarded store's element, an
    # empty reduction range), the value is this one's (an accumulation's start)


def _reads(s):
    """(key, location, leading index) for each read a leaf statement makes."""
    out = []

    def expr(e):
        if isinstance(e, Ref):
            out.append((id(e), e.name, ()))
            return
        if isinstance(e, Index):
            out.append((id(e), e.base, tuple(e.idx)))
            return
        for c in e.children():
            expr(c)

    if isinstance(s, (Store, Assign)):
        expr(s.value)
        if s.aug:
            out.append(("aug", s.buf if isinstance(s, Store) else s.name,
                        tuple(s.idx) if isinstance(s, Store) else ()))
    elif isinstance(s, If):  # a conditional as one leaf: its condition and both branches
        expr(s.cond)
        for b in list(s.body) + list(s.orelse):
            out.extend(_reads(b))
    return out


def _writes(s):
    if isinstance(s, Store):
        return [(s.buf, tuple(s.idx))]
    if isinstance(s, (Assign, Alloc)):
        return [(s.name, ())]
    if isinstance(s, If):  # what either branch may write
        return [w for b in list(s.body) + list(s.orelse) for w in _writes(b)]
    return []


def _holds_loop(s) -> bool:
    return isinstance(s, For) or (isinstance(s, If) and any(_holds_loop(b) for b in list(s.body) + list(s.orelse)))


def _iterations(path: tuple, dims: dict, guards: tuple):
    """The iterations of the loops `path` (outermost first; bounds may depend on outer
    loops, as in a triangular nest) where every `(condition, holds)` of `guards` holds (an
    enclosing `if` or `else`; conditions not affine in the loop variables are ignored,
    which only widens the domain): (the isl tuple `[L0, ..]`, their constraints as text,
    `aff` writing an index expression over them)."""
    from .bounds import guard_text

    leaf = Leaf(0, None, tuple(path), (0,) * (len(path) + 1))
    model = NestFlow.__new__(NestFlow)
    model.dims = dims
    lv = ", ".join(f"L{d}" for d in range(len(path)))

    def aff(x):
        return model._aff(leaf, x)

    cons = [model._dom(leaf)]
    for cond, holds in guards:
        try:
            g = guard_text(cond, holds, aff)
            if g is not None:
                isl.Set.read_from_str(context(), _ascii(f"{{ [{lv}] : {g} }}"))  # affine?
                cons.append(g)
        except (KeyError, TypeError, ValueError, isl.Error):
            pass  # a name that is no loop variable or dimension, or not affine: restricts nothing
    return f"[{lv}]", " and ".join(cons), aff


def index_can_leave(path: tuple, ie, size: int, dims: dict, guards: tuple = ()) -> bool:
    """Exactly (isl): whether index expression `ie` leaves 0..size-1 at some iteration of
    the loops `path` where the `guards` hold (`_iterations`). The interval bound check asks
    this only when it cannot prove the index in range itself."""
    space, cons, aff = _iterations(path, dims, guards)
    e = aff(ie)
    text = f"{{ {space} : {cons} and ({e} < 0 or {e} >= {size}) }}"
    return not isl.Set.read_from_str(context(), _ascii(text)).is_empty()


def condition_fails_at(path: tuple, cond_text, dims: dict, guards: tuple = ()) -> dict | None:
    """Exactly (isl): an iteration of the loops `path` where the `guards` hold
    (`_iterations`) at which a condition fails, as {loop variable: value}; None where there
    is none. `cond_text(aff, holds)` writes the condition (or its negation when not
    `holds`) in isl syntax with index expressions written by `aff`."""
    space, cons, aff = _iterations(path, dims, guards)
    fails = isl.Set.read_from_str(context(), _ascii(f"{{ {space} : {cons} and {cond_text(aff, False)} }}"))
    if fails.is_empty():
        return None
    return _values_at(path, fails.sample_point())


def _values_at(path: tuple, point) -> dict:
    """{loop variable: value} of the loops `path` at an isl point of their iterations."""
    return {f.var: point.get_coordinate_val(isl.dim_type.set, d).to_python() for d, f in enumerate(path)}


def first_iteration(path: tuple, dims: dict, guards: tuple, pred, limit: int) -> dict | None:
    """The first iteration of the loops `path` where the `guards` hold (`_iterations`) at
    which `pred({loop variable: value})` holds, trying each in turn; None where none does,
    or where there are more than `limit` of them (not tried)."""
    space, cons, _ = _iterations(path, dims, guards)
    domain = isl.Set.read_from_str(context(), _ascii(f"{{ {space} : {cons} }}"))
    if domain.count_val().to_python() > limit:
        return None
    found: list = []

    def visit(point):
        if not found:
            at = _values_at(path, point)
            if pred(at):
                found.append(at)

    domain.foreach_point(visit)
    return found[0] if found else None


def span(f: For, dims):
    """The values loop f takes as (smallest, count, |step|), or None when its bounds depend
    on enclosing loop variables (a triangular nest)."""
    try:
        lo, hi = ie_eval(f.lo, dims), ie_eval(f.hi, dims)
    except KeyError:
        return None
    if f.step > 0:
        n = max(0, -(-(hi - lo) // f.step))
        return lo, n, f.step
    n = max(0, -(-(lo - hi) // -f.step))
    return lo + f.step * (n - 1), n, -f.step


def trip(f: For, dims) -> int:
    sp = span(f, dims)
    return 0 if sp is None else sp[1]
