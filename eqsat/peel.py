"""A sum started at its own first term is one sum over one term more (and a sum started at
the sum of its first terms, an axis split in two loops, one sum over both: `_absorb_sum`).

    c[i, j] = a[i, 0] * b[0, j]                         (a nest of its own, or the same)
    for k in range(1, K): c[i, j] += a[i, k] * b[k, j]

lowers to `a[i, 0] * b[0, j] + sum[k' < K - 1] a[i, k' + 1] * b[k' + 1, j]`: the start is
the summand at k' = -1, so the whole is `sum[k < K] a[i, k] * b[k, j]`, a matmul's element
(`eqsat/reroll.py` does the same for loops written in pieces inside one nest, on the
statements; this is on the terms, so the start may come from an earlier nest's tensor).

The summand is compared with the start up to the order of + operands, the order and
grouping of * operands (`al * a[i, 0] * b[0, j]` against `al * b[k, j] * a[i, k]`: a
product regrouped may differ in its last bit) and with every index in one affine form. Floating point: the one sum adds the first term first, as the
loops did, but from 0.0 (a sum's start): the same value but for the sign of a zero where
every term is -0.0 (the loops give -0.0, the sum 0.0; a matmul kernel's accumulator starts
at 0.0 too). README, "floating point", says so.
"""
from __future__ import annotations

from . import terms as T
from .terms import Node


def absorb_first(start: Node, total: Node, new_var, functional=None) -> Node | None:
    """`start + total` as one sum where `total` is `sum[v < n] body` and `start` is `body`
    at v = -1 (`start` may be an element of a computation: read through, and of a kept
    nest's output whose functional form `functional` gives), or the sum of another term and
    such a start; else None. `new_var(extent)` makes the new sum's variable."""
    if total.op != "Sc.red" or total.args[0] != "sum":
        return None
    _, v, n, body = total.args
    if start.op == "Sc.load" and start.args[0].op == "Ten.opaque" and functional and start.args[0] in functional:
        start = Node("Sc.load", functional[start.args[0]], start.args[1])
    first = _element(start)
    if first is not None and first.op == "Sc.red" and first.args[0] == "sum" and body.op != "Sc.red":
        return _absorb_sum(first, total, new_var)
    if first is not None and first.op == "Sc.add" and body.op != "Sc.add":
        # an accumulator's start plus the first part of the sum, then the rest (`acc = beta *
        # r[i, j]`, a loop over k < 8, a loop over 8 <= k < K): the start plus one sum, as a
        # start plus one loop's sum is (the same reassociation)
        for keep, part in ((first.args[0], first.args[1]), (first.args[1], first.args[0])):
            merged = absorb_first(part, total, new_var)
            if merged is not None:
                return Node("Sc.add", keep, merged)
        return None
    if first is None or first.op != body.op:  # (the summand at -1 has the summand's own root)
        return None
    at = _shifted(body, v, None, -1)
    if at is None or not _same(_canonical(first), _canonical(at)):
        return None
    w = new_var(n + 1)
    shifted = _shifted(body, v, w, -1)  # body at v = w - 1
    return None if shifted is None else Node("Sc.red", "sum", w, n + 1, shifted)


def _absorb_sum(first: Node, total: Node, new_var) -> Node | None:
    """`first + total` as one sum where `first` is `sum[u < m] g(u)` and `total` is `sum[v <
    n] g(v + m)` (a sum over an axis split in two loops, `for k in range(0, 5)` and then
    `range(5, K)`, each a nest of its own), else None."""
    _, u, m, head = first.args
    _, v, n, body = total.args
    at = _shifted(body, v, u, -m)  # (body at v = u - m: the head's summand, where it is one)
    if at is None or not _same(_canonical(at), _canonical(head)):
        return None
    w = new_var(m + n)
    whole = _shifted(body, v, w, -m)
    return None if whole is None else Node("Sc.red", "sum", w, m + n, whole)


def _element(t: Node) -> Node | None:
    """A scalar term, or the element a load reads of a computation (its body at the load's
    indices)."""
    if t.op == "Sc.load" and t.args[0].op == "Ten.compute":
        comp, idx = t.args[0], T.unlist(t.args[1])
        dims = T.unlist(comp.args[0])
        if len(dims) != len(idx):
            return None
        env = {var: ix for (var, _), ix in zip(dims, idx)}
        return _rebuild(comp.args[1], lambda x: env.get(x.args[0]) if x.op == "Ix.v" else None)
    return None if t.sort != "Sc" else t


def _affine(x: Node):
    """An index term as (coefficient per variable, constant), or None."""
    if x.op == "Ix.v":
        return {x.args[0]: 1}, 0
    if x.op == "Ix.lit":
        return {}, x.args[0]
    if x.op == "Ix.scale":
        got = _affine(x.args[0])
        if got is None:
            return None
        c = x.args[1]
        return {k: c * a for k, a in got[0].items()}, c * got[1]
    if x.op == "Ix.add":
        a, b = _affine(x.args[0]), _affine(x.args[1])
        if a is None or b is None:
            return None
        coef = dict(a[0])
        for k, c in b[0].items():
            coef[k] = coef.get(k, 0) + c
        return {k: c for k, c in coef.items() if c}, a[1] + b[1]
    return None


def _build(coef: dict, const: int) -> Node:
    return T.ix_affine([(Node("Ix.v", var), coef[var]) for var in sorted(coef, key=T.show_var)], const)


def _shifted(body: Node, v: Node, w: Node | None, delta: int) -> Node | None:
    """`body` with v replaced by `w + delta` (`w` None: by the constant delta), every index
    that mentions v in one affine form; None where v sits anywhere else (not an index)."""
    ok = [True]

    def replace(x):
        if x.op.startswith("Ix."):
            got = _affine(x)
            if got is None:
                if any(y.op == "Ix.v" and y.args[0] is v for y in T.walk(x)):
                    ok[0] = False
                return None
            coef, const = got
            if v not in coef:
                return None
            c = coef.pop(v)
            if w is not None:
                coef[w] = coef.get(w, 0) + c
            return _build(coef, const + c * delta)
        if x.op == "Sc.red" and x.args[1] is v:
            ok[0] = False  # (v bound again inside: binders are unique, so never; but never rename under it)
        return None

    out = _rebuild(body, replace)
    return out if ok[0] else None


def _canonical(t: Node) -> Node:
    """`t` with every index in one affine form (its variables in name order)."""
    def replace(x):
        if x.op.startswith("Ix."):
            got = _affine(x)
            return None if got is None else _build(*got)
        return None

    return _rebuild(t, replace)


def _rebuild(n: Node, replace) -> Node:
    """`T.rebuild` that does not enter tensors: a load's tensor is a whole earlier
    computation (a chain's every layer before), which no index of this sum's summand is in."""
    memo: dict = {}

    def go(x):
        got = memo.get(x)
        if got is None:
            new = replace(x)
            if new is None:
                new = x if x.sort == "Ten" else \
                    Node(x.op, *[go(a) if isinstance(a, Node) else a for a in x.args])
            got = memo[x] = new
        return got

    return go(n)


def _factors(t: Node) -> list:
    """The factors of a product, however grouped (`(a * b) * c`: [a, b, c])."""
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        if x.op == "Sc.mul":
            stack.extend(x.args)
        else:
            out.append(x)
    return out


def _same(a: Node, b: Node, budget: list | None = None) -> bool:
    """Equal terms up to the order of + operands and the order and grouping of * operands
    (a product regrouped differs in its last bits, as a matmul's factored scale does: the
    README's floating point), at most ~10k comparisons: a term that needs more is taken as
    different."""
    budget = [10_000] if budget is None else budget
    budget[0] -= 1
    if a is b:
        return True
    if budget[0] < 0 or a.op != b.op or len(a.args) != len(b.args):
        return False
    if a.op == "Sc.mul":  # (a product's factors in any grouping: `al * b[k, j] * a[i, k]`)
        fa, fb = _factors(a), _factors(b)
        if len(fa) != len(fb):
            return False
        left = list(fb)
        for x in fa:
            hit = next((k for k, y in enumerate(left) if _same(x, y, budget)), None)
            if hit is None:
                return False
            left.pop(hit)
        return True
    if a.op == "Sc.add":
        (x, y), (p, q) = a.args, b.args
        return (_same(x, p, budget) and _same(y, q, budget)) or (_same(x, q, budget) and _same(y, p, budget))
    return all(_same(x, y, budget) if isinstance(x, Node) and isinstance(y, Node) else x == y
               for x, y in zip(a.args, b.args))
