"""Reductions and scans of tensors, read element by element (a part of `eqsat/desugar.py`'s
pass): `np.sum(x)`, `np.max(x, axis=1)`, `x.mean(keepdims=True)`, of a tensor of known
shape or an expression over slices, are loops before the statement into a scalar or a
tensor of the other axes; `np.sum(y[m])` of what a mask selects, loops taking each
element where the mask holds; `np.cumsum(x, axis=k)`, loops of running sums;
`np.einsum("ik,kj->ij", a, b)`, loops summing products.
"""
from __future__ import annotations

import ast
import builtins
import copy
import math
import string

import numpy as np

from . import desugar as _d
from . import sections
from .hoisting import Hoisting, record_result
from .names import LIB, SCALAR


REDUCTIONS = {np.sum: "sum", np.max: "max", np.amax: "max", np.min: "min", np.amin: "min", np.mean: "mean",
              np.prod: "prod"}
METHODS = {"sum": "sum", "max": "max", "min": "min", "mean": "mean", "prod": "prod"}
SCANS = {np.cumsum: "cumsum", np.cumprod: "cumprod"}


def is_reduction(f, resolve) -> bool:
    """Whether callee `f` is one of the reductions `_Reductions` reads (`np.max`, `x.sum`),
    `resolve(name)` being what a module-level name means."""
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and resolve(f.value.id) is np:
        return getattr(np, f.attr, None) in REDUCTIONS
    if isinstance(f, ast.Name):
        return any(resolve(f.id) is g for g in REDUCTIONS)
    return isinstance(f, ast.Attribute) and f.attr in METHODS


def is_numpy(f, name: str, resolve) -> bool:
    """Whether callee `f` is numpy's function `name` (`resolve(name)`: what a module-level
    name means)."""
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and resolve(f.value.id) is np:
        return f.attr == name
    return isinstance(f, ast.Name) and resolve(f.id) is getattr(np, name)


def is_einsum(f, resolve) -> bool:
    return is_numpy(f, "einsum", resolve)


class Reductions(Hoisting):
    """`np.sum(x)`, `np.max(x, axis=1)`, `x.mean()`, ... of a tensor of declared shape: loops
    before the statement, into a scalar (no axis) or a tensor of the other axes."""

    def __init__(self, env):
        super().__init__()
        self.env = env

    def visit_Assign(self, n):
        self.generic_visit(n)
        direct = self._bound_directly(n)
        if direct is not None:
            return direct
        record_result(n, self.env)
        return n

    def _bound_directly(self, n):
        """`m = np.max(s, axis=1, keepdims=True)`: the new tensor this pass computed into a
        buffer of its own is the one `m` names, so the loops fill `m` itself (its statements
        placed, the assignment dropped: None for the placed statements' `pass`). Bound to
        its temporary instead, `m` was a view of it, which a loop unrolled or lifted as a
        whole cannot carry (a softmax per head in a loop over heads stayed a loop kernel).
        Only where the statements read nothing of `m` (`m = np.max(m, ...)` keeps its
        temporary) and `m` is named nowhere else as a temporary."""
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Subscript) and isinstance(n.value, ast.Name):
            return self._stored_directly(n)
        if len(n.targets) != 1 or not isinstance(n.targets[0], ast.Name) or not isinstance(n.value, ast.Name):
            return None
        name, temp = n.targets[0].id, n.value.id
        if not temp.startswith("eqsat_red") or temp not in self.env.shapes or not self.pending:
            return None
        placed = {x.id for st in self.pending for x in ast.walk(st) if isinstance(x, ast.Name)}
        if name in placed or temp not in placed:
            return None
        self.pending = [_d._Renamed({temp: name}).visit(st) for st in self.pending]
        self.env.shapes[name] = self.env.shapes[temp]
        return ast.copy_location(ast.Pass(), n)

    def _stored_directly(self, n):
        """`out[:, i, j, :] = np.max(x[...], axis=(1, 2))` in a loop (a max pool): where the
        loops this pass placed only store each element of their temporary once (max, min:
        no accumulation into it) and read only tensors nothing in the function writes, they
        store into the target's elements instead, and the temporary and its copy go (each
        iteration allocated a buffer and copied it: 5x numba's time, a probe)."""
        target, temp = n.targets[0], n.value.id
        if not temp.startswith("eqsat_red") or temp not in self.env.shapes or not self.pending:
            return None
        sec = sections.parse(target, self.env)
        dims = self.env.shapes[temp][0]
        if sec is None or any(a[0] == "new" for a in sec.axes) or len(sec.dims) != len(dims) or \
                not sections.same_dims(sec.dims, dims):
            return None
        written = {x.value.id for x in ast.walk(self.env.fdef) if isinstance(x, ast.Subscript) and
                   isinstance(x.ctx, ast.Store) and isinstance(x.value, ast.Name)} | set(self.env.stores)
        alloc, stores = None, []
        for st in self.pending:
            for x in ast.walk(st):
                if isinstance(x, ast.Name) and x.id == temp:
                    continue
                if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load) and x.id in self.env.shapes and \
                        x.id in written:
                    return None  # (a tensor the function writes: it may be the target's memory)
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                    st.targets[0].id == temp:
                if alloc is not None:
                    return None
                alloc = st
        for st in self.pending:
            for x in ast.walk(st):
                if isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name) and x.value.id == temp:
                    if not isinstance(x.ctx, ast.Store) or len(_d.index_elts(x.slice)) != len(dims):
                        return None
                    stores.append(x)
                elif isinstance(x, ast.AugAssign) and isinstance(x.target, ast.Subscript) and \
                        isinstance(x.target.value, ast.Name) and x.target.value.id == temp:
                    return None  # (an accumulation reads the temporary's zeros)
        names = [x for st in self.pending for x in ast.walk(st) if isinstance(x, ast.Name) and x.id == temp]
        if alloc is None or len(names) != len(stores) + 1:
            return None  # (the temporary read somewhere, or not allocated here)
        for x in stores:
            new = sec.at(list(_d.index_elts(x.slice)), ast.Store())
            x.value, x.slice = new.value, new.slice
        self.pending = [st for st in self.pending if st is not alloc]
        return ast.copy_location(ast.Pass(), n)

    def visit_Call(self, n):
        self.generic_visit(n)
        kind, x, axis = None, None, None
        f = n.func
        obj = self.env.callee(f)
        kws = {k.arg: k.value for k in n.keywords}
        if obj in SCANS and 1 <= len(n.args) <= 2 or \
                isinstance(f, ast.Attribute) and f.attr in ("cumsum", "cumprod") and obj is None and len(n.args) <= 1:
            return self.scan(n, obj, kws)
        if obj is np.einsum:
            return self.einsum(n)
        if obj in (np.inner, np.vdot, np.tensordot):
            spec = self.contraction(n, obj, kws)
            if spec is None:
                return n
            return self.einsum(ast.copy_location(ast.Call(func=ast.Name(id=LIB + "einsum", ctx=ast.Load()), args=[
                ast.Constant(spec), *n.args[:2]], keywords=[]), n))
        if obj in REDUCTIONS and 1 <= len(n.args) <= 2:
            kind, x = REDUCTIONS[obj], n.args[0]
            axis = n.args[1] if len(n.args) == 2 else kws.pop("axis", None)
        elif isinstance(f, ast.Attribute) and f.attr in METHODS and len(n.args) <= 1 and obj is None:
            kind, x = METHODS[f.attr], f.value
            axis = n.args[0] if n.args else kws.pop("axis", None)
        keepdims = _d.keepdims_of(kws)
        if kind is None or kws or keepdims is None:
            return n
        if isinstance(x, ast.Subscript) and sections.is_mask(x.slice, self.env.masks):
            return self.reduce_selected(n, kind, x) if axis is None and not keepdims and kind != "prod" else n
        got = self.env.value_shape(x)
        if got is SCALAR and axis is None and not keepdims:
            return x  # (numpy's sum, max, min, mean of a number: the number)
        if got is None or got is SCALAR or not got[1]:
            return n
        lead = []  # (a row `x[i]`: its elements are x[i, ...])
        elem_of = self._elements_of(x, got[0]) if sections.contains_section(x, self.env) or \
            (self.guards and not isinstance(x, (ast.Name, ast.Subscript))) else None
        # (an expression under a condition, `np.sum(a[i] * b[j]) if c else 0.0`, read element by
        # element: a tensor computed under the condition would be bound on one branch only)
        if elem_of is not None:
            pass  # (a slice expression, read element by element)
        elif isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name) and not _d.has_slice(x.slice):
            x, lead = x.value, _d.index_elts(x.slice)
        elif not isinstance(x, ast.Name):  # (an expression: computed once, then indexed)
            if self.guards:
                return n  # (a tensor bound under a condition: left as written, refused)
            x = self.computed(x, f"eqsat_red{self.count}_of", got, n)
        dims = got[0]
        axis = _d.reduced_axes(axis, len(dims))
        if axis is False:
            return n
        out = self.reduce(n, kind, x, lead, dims, axis, elem_of)
        return self.kept(n, out, dims, axis) if keepdims else out

    def scan(self, n, obj, kws: dict):
        """`np.cumsum(x, axis=k)` (np.cumprod, the methods) of a tensor whose shape is known:
        a new tensor, each line along axis k its running sum (product) in order, computed by
        loops before the statement. A vector's axis may be left out; numpy flattens a
        matrix without one, which is left as written (refused)."""
        f = n.func
        if obj in SCANS:
            kind, x = SCANS[obj], n.args[0]
            axis = n.args[1] if len(n.args) == 2 else kws.pop("axis", None)
        else:
            kind, x = f.attr, f.value
            axis = n.args[0] if n.args else kws.pop("axis", None)
        got = self.env.value_shape(x)
        if kws or got is None or got is SCALAR or not got[1] or self.guards:
            return n
        dims = got[0]
        axes = _d.reduced_axes(axis, len(dims)) if axis is not None or len(dims) == 1 else False
        if axes is None and len(dims) == 1:
            axes = frozenset({0})  # (a vector's one axis: `_axes` says "every axis")
        if not axes or len(axes) != 1:
            return n
        (a,) = axes
        if not isinstance(x, ast.Name):  # (an expression: computed once, then indexed)
            x = self.computed(x, f"eqsat_red{self.count}_of", got, n)
        out = f"eqsat_red{self.count}_scan"
        acc = f"eqsat_red{self.count}_run"
        self.count += 1
        idx = [ast.Name(id=f"{out}_{d}", ctx=ast.Load()) for d in range(len(dims))]
        run = ast.Name(id=acc, ctx=ast.Load())
        step = ast.BinOp(left=run, op=ast.Add() if kind == "cumsum" else ast.Mult(),
                         right=sections.subscript(x.id, idx))
        body = [ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())], value=step),
                ast.Assign(targets=[sections.subscript(out, idx, ast.Store())], value=run)]
        # (a running sum from -0.0, the exact additive identity: numpy's first element is x's own,
        # -0.0 included, where 0.0 + -0.0 is 0.0)
        body = [ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())],
                           value=ast.Constant(-0.0 if kind == "cumsum" else 1.0))] + _nest([idx[a].id], [dims[a]], body)
        others = [d for d in range(len(dims)) if d != a]
        body = _nest([idx[d].id for d in others], [dims[d] for d in others], body)
        self.place([self.allocation(out, dims)] + body, n)
        return ast.copy_location(ast.Name(id=out, ctx=ast.Load()), n)

    def contraction(self, n, obj, kws: dict) -> str | None:
        """The einsum spec of `np.inner(a, b)` (the last axes of both), `np.vdot(a, b)` (every
        axis, a and b of one shape: numpy flattens both) or `np.tensordot(a, b, axes=k)` (a's
        last k axes with b's first k; `axes=([i, ...], [j, ...])` pairs them), over operands
        of known shape whose paired axes have the same declared extents; else None (left as
        written: refused)."""
        if len(n.args) != (3 if obj is np.tensordot and "axes" not in kws and len(n.args) == 3 else 2) or \
                self.guards or set(kws) - ({"axes"} if obj is np.tensordot else set()):
            return None
        shapes = [self.env.value_shape(a) for a in n.args[:2]]
        if any(g is None or g is SCALAR or not g[1] or not g[0] for g in shapes):
            return None
        (da, _), (db, _) = shapes
        letters = string.ascii_lowercase
        if len(da) + len(db) > len(letters):
            return None
        la, lb = list(letters[:len(da)]), list(letters[len(da):len(da) + len(db)])
        if obj is np.inner:
            pairs = [(len(da) - 1, len(db) - 1)]
        elif obj is np.vdot:
            if len(da) != len(db):
                return None
            pairs = list(zip(range(len(da)), range(len(db))))
        else:
            axes = kws.get("axes", n.args[2] if len(n.args) == 3 else ast.Constant(2))
            k = _d._number(axes)
            if type(k) is int:
                if not 0 <= k <= min(len(da), len(db)):
                    return None
                pairs = list(zip(range(len(da) - k, len(da)), range(k)))
            elif isinstance(axes, (ast.Tuple, ast.List)) and len(axes.elts) == 2 and \
                    all(isinstance(e, (ast.Tuple, ast.List)) for e in axes.elts):
                ia, ib = ([_d._number(x) for x in e.elts] for e in axes.elts)
                if len(ia) != len(ib) or not all(type(x) is int for x in ia + ib):
                    return None
                ia, ib = [x % len(da) if -len(da) <= x < len(da) else None for x in ia], \
                    [x % len(db) if -len(db) <= x < len(db) else None for x in ib]
                if None in ia or None in ib or len(set(ia)) != len(ia) or len(set(ib)) != len(ib):
                    return None
                pairs = list(zip(ia, ib))
            else:
                return None
        for i, j in pairs:
            if ast.dump(da[i]) != ast.dump(db[j]):
                return None
            lb[j] = la[i]
        paired_a, paired_b = {i for i, _ in pairs}, {j for _, j in pairs}
        out = [c for i, c in enumerate(la) if i not in paired_a] + [c for j, c in enumerate(lb) if j not in paired_b]
        return "".join(la) + "," + "".join(lb) + "->" + "".join(out)

    def einsum(self, n):
        """`np.einsum(spec, a, b, ...)` with a constant spec of letters, over tensors (and
        numbers, spec "") of known shape: loops before the statement, the output's letters
        outermost (in the order the output names them) and the summed letters inside (in
        the order they first appear), each output element the sum of the product of the
        operands' elements (`out[i, k] = out[i, k] + a[i, j] * b[j, k]`; with no letter
        summed, one store of the product). Without `->` the output is numpy's: the letters
        used once, in alphabetical order. More than two operands are contracted a pair at a
        time, left to right, each pair into the letters the output or a later operand names
        (`"ik,kj,jl->il"` is two matmuls): no step costs more than the loops over every letter
        at once, as numpy's einsum without `optimize` runs it, and its `optimize` would pick
        an order of its own (the same sums, up to rounding). Left as written (the front end
        refuses it, with its location): keywords but `optimize=` (an order of evaluation:
        the same sums), `...`, a letter given two different declared extents, an operand
        whose axes the spec does not match, and an einsum under a condition. The sums are sequential, numpy's may be pairwise or BLAS: the
        same up to rounding."""
        if any(k.arg != "optimize" for k in n.keywords) or len(n.args) < 2 or self.guards or \
                not isinstance(n.args[0], ast.Constant) or \
                not isinstance(n.args[0].value, str):
            return n
        spec = n.args[0].value.replace(" ", "")
        ins, arrow, out = spec.partition("->")
        terms, ops = ins.split(","), list(n.args[1:])
        letters = ins.replace(",", "")
        if len(terms) != len(ops) or not all(c.isascii() and c.isalpha() for c in letters + out):
            return n
        if not arrow:
            out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        if len(set(out)) != len(out) or any(c not in letters for c in out):
            return n
        extent: dict = {}  # letter -> its extent (an expression)
        names = []
        for term, op in zip(terms, ops):
            got = self.env.value_shape(op)
            if got is SCALAR and not term:
                names.append(None)
                continue
            if got is None or got is SCALAR or not got[1] or len(got[0]) != len(term):
                return n
            for c, d in zip(term, got[0]):
                if c in extent and ast.dump(extent[c]) != ast.dump(d):
                    return n
                extent.setdefault(c, d)
            names.append(op if isinstance(op, ast.Name) else None)
        if len(ops) > 2:  # contracted a pair at a time, left to right
            later = set(out).union(*terms[2:])
            mid = "".join(c for c in dict.fromkeys(terms[0] + terms[1]) if c in later)
            first = ast.copy_location(ast.Call(func=copy.deepcopy(n.func), args=[
                ast.Constant(f"{terms[0]},{terms[1]}->{mid}"), ops[0], ops[1]], keywords=[]), n)
            rest = ast.copy_location(ast.Call(func=n.func, args=[
                ast.Constant(",".join([mid, *terms[2:]]) + "->" + out), self.einsum(first), *ops[2:]],
                keywords=[]), n)
            return self.einsum(rest)
        for k, (term, op) in enumerate(zip(terms, ops)):
            if term and names[k] is None:  # (an expression: computed once, then indexed)
                names[k] = self.computed(op, f"eqsat_red{self.count}_of{k}", self.env.value_shape(op), n)
        acc = f"eqsat_red{self.count}"
        self.count += 1
        summed = [c for c in dict.fromkeys(letters) if c not in out]
        idx = {c: f"{acc}_{c}" for c in dict.fromkeys(letters)}
        factors = [sections.subscript(names[k].id, [ast.Name(id=idx[c], ctx=ast.Load()) for c in term])
                   if term else copy.deepcopy(op) for k, (term, op) in enumerate(zip(terms, ops))]
        elem = factors[0]
        for f in factors[1:]:
            elem = ast.BinOp(left=elem, op=ast.Mult(), right=f)

        def at(ctx):
            if not out:
                return ast.Name(id=acc, ctx=ctx)
            return sections.subscript(acc, [ast.Name(id=idx[c], ctx=ast.Load()) for c in out], ctx)

        if out:
            stmts = [self.allocation(acc, [extent[c] for c in out])]
        else:
            stmts = [ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())], value=ast.Constant(0.0))]
            self.env.scalars.add(acc)
        value = ast.BinOp(left=at(ast.Load()), op=ast.Add(), right=elem) if summed or not out else elem
        order = list(out) + summed
        stmts += _nest([idx[c] for c in order], [extent[c] for c in order],
                       [ast.Assign(targets=[at(ast.Store())], value=value)])
        self.place(stmts, n)
        return ast.copy_location(ast.Name(id=acc, ctx=ast.Load()), n)

    def kept(self, n, acc, dims: list, axis):
        """`keepdims=True`: the reduction `acc` copied into a tensor with an axis of one
        element where the reduced axis was (every axis where none was given)."""
        name = f"eqsat_red{self.count}_kept"
        self.count += 1
        shape = [ast.Constant(1) if axis is None or d in axis else dims[d] for d in range(len(dims))]
        idx = [f"{name}_{d}" for d in range(len(dims))]
        full = [ast.Constant(0) if axis is None or d in axis else ast.Name(id=idx[d], ctx=ast.Load())
                for d in range(len(dims))]
        part = [ast.Name(id=idx[d], ctx=ast.Load()) for d in range(len(dims)) if axis is not None and d not in axis]
        src = acc if not part else ast.Subscript(value=acc, slice=part[0] if len(part) == 1 else ast.Tuple(
            elts=part, ctx=ast.Load()), ctx=ast.Load())
        body = [ast.Assign(targets=[ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()), slice=ast.Tuple(
            elts=full, ctx=ast.Load()), ctx=ast.Store())], value=src)]
        kept = [d for d in range(len(dims)) if axis is not None and d not in axis]
        body = _nest([idx[d] for d in kept], [dims[d] for d in kept], body)
        self.place([self.allocation(name, shape)] + body, n, init=1)
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), n)

    def _elements_of(self, x, dims: list):
        """`idx -> x's element there` for an expression over slices that reads element by
        element with nothing computed before (`eqsat/sections.py`), else None."""
        def elem_of(idx):
            pre: list = []
            out = self.env.elements.element(x, idx, pre, dims)
            if pre:  # (a product inside: computed into a buffer first instead)
                raise sections.NotElementwise
            return out

        try:
            elem_of([ast.Name(id="eqsat_probe", ctx=ast.Load()) for _ in dims])
        except sections.NotElementwise:
            return None
        return elem_of

    def reduce(self, n, kind: str, x, lead: list, dims: list, axis, elem_of=None):
        """Loops before the statement computing the reduction; `elem_of(index names)`, where
        given, is the element of `x` at them (else `x[lead + index]`)."""
        acc = f"eqsat_red{self.count}"
        self.count += 1
        idx = [f"{acc}_{d}" for d in range(len(dims))]
        keep = [d for d in range(len(dims)) if d not in axis] if axis is not None else []

        def name(i, ctx=None):
            return ast.Name(id=i, ctx=ctx or ast.Load())

        def at(d_list, ctx):
            if not d_list:
                return name(acc, ctx)
            return sections.subscript(acc, [name(idx[d]) for d in d_list], ctx)

        def loops(d_list, body):
            return _nest([idx[d] for d in d_list], [dims[d] for d in d_list], body)

        start = {"sum": 0.0, "mean": 0.0, "max": -math.inf, "min": math.inf, "prod": 1.0}[kind]
        elem = elem_of([name(i) for i in idx]) if elem_of is not None else ast.Subscript(
            value=copy.deepcopy(x), slice=ast.Tuple(elts=[copy.deepcopy(e) for e in lead] + [name(i) for i in idx],
                                                    ctx=ast.Load()), ctx=ast.Load())
        if kind in ("max", "min"):
            # numpy raises where a max or min reduces an axis of size 0 (no identity); the
            # loops would give -inf: asserted on the sizes (and, inside loops, the loop
            # variables: `np.max(x[i, :i])`), checked when they are known at every
            # iteration that runs the statement (`bounds.check_loop_assertions`)
            tests = [ast.Compare(left=copy.deepcopy(dims[d]), ops=[ast.Gt()], comparators=[ast.Constant(0)])
                     for d in range(len(dims)) if axis is None or d in axis]
            word = "maximum" if kind == "max" else "minimum"
            test = self.env.visit(tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.And(), values=tests))
            self.place([ast.Assert(test=test,
                                   msg=ast.Constant(f"zero-size array to reduction operation {word} which has "
                                                    f"no identity (numpy raises ValueError)"))], n, init=0)
        if kind in ("max", "min") and self._builtin(kind):
            return self._extremum(n, kind, acc, idx, keep, axis, dims, elem)
        if kind in ("sum", "mean", "prod"):
            step = ast.BinOp(left=at(keep, ast.Load()), op=ast.Mult() if kind == "prod" else ast.Add(), right=elem)
        else:  # (numpy's: NaN propagates)
            step = ast.Call(func=name(LIB + ("maximum" if kind == "max" else "minimum")),
                            args=[at(keep, ast.Load()), elem], keywords=[])
        stmts = []
        init = 1  # (what binds the result: the scalar, or the tensor and its first values)
        if keep:
            stmts.append(self.allocation(acc, [dims[d] for d in keep]))  # (its shape: `x.sum(axis=1).max()`)
            if start:
                stmts += loops(keep, [ast.Assign(targets=[at(keep, ast.Store())], value=ast.Constant(start))])
                init = 2
        else:
            stmts.append(ast.Assign(targets=[name(acc, ast.Store())], value=ast.Constant(start)))
            self.env.scalars.add(acc)  # (`a[1:] = a[1:] - np.sum(a)`: read element by element)
        stmts += loops(list(range(len(dims))), [ast.Assign(targets=[at(keep, ast.Store())], value=step)])
        if kind == "mean":
            count = _product([copy.deepcopy(dims[d]) for d in range(len(dims)) if axis is None or d in axis])
            if keep:
                stmts += loops(keep, [ast.Assign(targets=[at(keep, ast.Store())],
                                                 value=ast.BinOp(left=at(keep, ast.Load()), op=ast.Div(),
                                                                 right=count))])
            else:
                stmts.append(ast.Assign(targets=[name(acc, ast.Store())],
                                        value=ast.BinOp(left=name(acc), op=ast.Div(), right=count)))
        self.place(stmts, n, init)
        return ast.copy_location(name(acc), n)


    def _builtin(self, kind: str) -> bool:
        """Whether the function's `max` (`min`) is Python's, which the loops below call."""
        return kind not in self.env.stores and self.env.resolve(kind) is getattr(builtins, kind)

    def _extremum(self, n, kind: str, acc: str, idx: list, keep: list, axis, dims: list, elem):
        """numpy's max (min) as loops the lowering reads as reductions: for each kept index,
        a scalar `m = max(m, x)` over the reduced axes (Python's max with the accumulator
        first skips a NaN: a reduction) beside a count of the NaNs it met (a sum), and the
        result NaN where the count is not zero (numpy's max propagates NaN). Equal to
        numpy's but for which of -0.0 and 0.0 a tie of zeros gives (numpy's own reduction
        leaves that to its vector order)."""
        def name(i, ctx=None):
            return ast.Name(id=i, ctx=ctx or ast.Load())

        reduced = [d for d in range(len(dims)) if d not in keep]
        m, count = f"{acc}_m", f"{acc}_nans"
        start = -math.inf if kind == "max" else math.inf
        differs = ast.Compare(left=copy.deepcopy(elem), ops=[ast.NotEq()], comparators=[copy.deepcopy(elem)])
        inner = [ast.Assign(targets=[name(m, ast.Store())], value=ast.Call(func=name(kind), args=[name(m), elem],
                                                                           keywords=[])),
                 ast.AugAssign(target=name(count, ast.Store()), op=ast.Add(),
                               value=ast.IfExp(test=differs, body=ast.Constant(1.0), orelse=ast.Constant(0.0)))]
        result = ast.IfExp(test=ast.Compare(left=name(count), ops=[ast.Eq()], comparators=[ast.Constant(0.0)]),
                           body=name(m), orelse=ast.Constant(math.nan))
        target = sections.subscript(acc, [name(idx[d]) for d in keep], ast.Store()) if keep else name(acc, ast.Store())
        body = [ast.Assign(targets=[name(m, ast.Store())], value=ast.Constant(start)),
                ast.Assign(targets=[name(count, ast.Store())], value=ast.Constant(0.0))] + \
            _nest([idx[d] for d in reduced], [dims[d] for d in reduced], inner) + \
            [ast.Assign(targets=[target], value=result)]
        self.env.scalars |= {m, count}
        if keep:
            stmts = [self.allocation(acc, [dims[d] for d in keep])] + \
                _nest([idx[d] for d in keep], [dims[d] for d in keep], body)
        else:
            stmts = [ast.Assign(targets=[name(acc, ast.Store())], value=ast.Constant(start))] + body
            self.env.scalars.add(acc)
        self.place(stmts, n, 1)
        return ast.copy_location(name(acc), n)

    def reduce_selected(self, n, kind: str, x):
        """`np.sum(y[m])`, `y[m].mean()`, ... of the elements a mask of y's shape selects
        (numpy's boolean index: a vector of them): loops before the statement over y's
        elements, each taken where m holds. The mean of none is NaN, as numpy's; the max
        or min of none is -inf or inf, where numpy raises."""
        y, mask = x.value, x.slice
        got = self.env.value_shape(y) if isinstance(y, ast.Name) else None
        if got is None or got is SCALAR or not got[1] or self.guards:
            return n
        dims = got[0]
        cond = self.env.condition_shape(mask)
        if cond is None or cond is SCALAR or not sections.same_dims(cond[0], dims):
            return n
        acc = f"eqsat_red{self.count}"
        count = f"eqsat_red{self.count}_count"
        self.count += 1
        idx = [ast.Name(id=f"{acc}_{d}", ctx=ast.Load()) for d in range(len(dims))]
        pre: list = []
        try:
            test = self.env.elements.truth(mask, idx, pre, dims)
        except sections.NotElementwise:
            return n
        if pre:
            return n
        elem = sections.subscript(y.id, idx)
        acc_load = ast.Name(id=acc, ctx=ast.Load())
        if kind in ("sum", "mean"):
            step = ast.BinOp(left=acc_load, op=ast.Add(), right=elem)
        else:
            step = ast.Call(func=ast.Name(id=LIB + ("maximum" if kind == "max" else "minimum"), ctx=ast.Load()),
                            args=[acc_load, elem], keywords=[])
        body = [ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())], value=step)]
        start = {"sum": 0.0, "mean": 0.0, "max": -math.inf, "min": math.inf}[kind]
        stmts = [ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())], value=ast.Constant(start))]
        if kind == "mean":
            body.append(ast.AugAssign(target=ast.Name(id=count, ctx=ast.Store()), op=ast.Add(),
                                      value=ast.Constant(1.0)))
            stmts.append(ast.Assign(targets=[ast.Name(id=count, ctx=ast.Store())], value=ast.Constant(0.0)))
        loop = _nest([i.id for i in idx], dims, [ast.If(test=test, body=body, orelse=[])])
        stmts += loop
        if kind == "mean":
            stmts.append(ast.Assign(targets=[ast.Name(id=acc, ctx=ast.Store())], value=ast.IfExp(
                test=ast.Compare(left=ast.Name(id=count, ctx=ast.Load()), ops=[ast.Gt()],
                                 comparators=[ast.Constant(0.0)]),
                body=ast.BinOp(left=acc_load, op=ast.Div(), right=ast.Name(id=count, ctx=ast.Load())),
                orelse=ast.Constant(math.nan))))
        self.env.scalars.add(acc)
        self.place(stmts, n)  # (no guards here: see above)
        return ast.copy_location(ast.Name(id=acc, ctx=ast.Load()), n)


def _product(es: list):
    out = es[0]
    for e in es[1:]:
        out = ast.BinOp(left=out, op=ast.Mult(), right=e)
    return out


def _nest(names: list, extents: list, body: list) -> list:
    """`body` inside `for names[0] in range(extents[0]): for names[1] in ...` (outermost
    first)."""
    for v, d in reversed(list(zip(names, extents))):
        body = [ast.For(target=ast.Name(id=v, ctx=ast.Store()), iter=ast.Call(
            func=ast.Name(id="range", ctx=ast.Load()), args=[copy.deepcopy(d)], keywords=[]), body=body, orelse=[])]
    return body
