"""Which rule sets can match a program at all, known before saturation starts.

A rule matches only where every table its query reads has a row, and it can add rows only
to the tables its actions name. The tables the build fills are known from the lowered
terms (their ops, the inputs' shapes, the outputs), so the closure -- every rule whose query
tables are all reachable, its action tables then reachable too, repeated to a fixpoint --
holds every rule that could ever match in this saturation (an over-approximation: a rule in
it may still never match). A rule set with no rule in the closure is dropped from the
schedules: running it costs egglog a little every step (the corpus's `@`-written programs
have no loop to make a matmul of, nor a scalar algebra to rewrite: about half the rules),
and it cannot change the e-graph, so saturation reaches the same e-graph step for step.

Tables are named by their callables (`Ten.matmul`, `shape_of`), the names `provenance`
gives them; primitives (`i64` arithmetic, comparisons) are no tables and ask for nothing. A
rule that cannot be read (another egglog-python layout, a declaration kind not known here)
keeps its rule set.
"""
from __future__ import annotations

import dataclasses

from egglog import Ruleset

from .provenance import _op_name, _rules_of
from .terms import Node

# what the build (`egraph.build`) fills besides the ops of the terms
BUILT = frozenset({"shape_of", "output"})
ENABLED = True  # tests compare saturation with and without dropping rule sets

_TABLE_DECLS = ("ConstructorDecl", "RelationDecl", "ConstantDecl")


def _is_table(decls, ref) -> bool:
    """Whether a callable is a table of the e-graph. One whose declaration is not found (a
    builtin such as `!=`) is not: never asked for in a query and never filled, alike in
    every rule, so the closure stays an over-approximation."""
    try:
        d = decls.get_callable_decl(ref)
    except Exception:  # noqa: BLE001 - egglog-python raises its own lookup errors
        return False
    kind = type(d).__name__
    return kind in _TABLE_DECLS or (kind == "FunctionDecl" and not d.builtin)


def _tables(x, decls, out: set) -> set:
    """The tables the calls in a declaration tree read or write."""
    if isinstance(x, (tuple, list)):
        for y in x:
            _tables(y, decls, out)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        if type(x).__name__ == "CallDecl" and _is_table(decls, x.callable):
            name = _op_name(x.callable)
            if name:
                out.add(name)
        for f in dataclasses.fields(x):
            if f.name not in ("tp", "callable"):
                _tables(getattr(x, f.name), decls, out)
    return out


def _rule(decl, decls):
    """[(query tables, action tables)] of one rule (two for a rewrite both ways), or None
    where it is not read here."""
    kind = type(decl).__name__
    if kind == "RewriteDecl":
        q = _tables((decl.lhs, decl.conditions), decls, set())
        return [(frozenset(q), frozenset(_tables(decl.rhs, decls, set())))]
    if kind == "BiRewriteDecl":
        a, b = frozenset(_tables(decl.lhs, decls, set())), frozenset(_tables(decl.rhs, decls, set()))
        return [(a, b), (b, a)]
    if kind == "RuleDecl":
        return [(frozenset(_tables(decl.body, decls, set())), frozenset(_tables(decl.head, decls, set())))]
    return None


_CACHE: dict = {}  # id(ruleset) -> (ruleset, its rules' tables or None)


def rule_tables(rs: Ruleset):
    """[(query tables, action tables)] of every rule of `rs`, or None where one cannot be
    read (then `rs` always runs). Computed once per rule set."""
    hit = _CACHE.get(id(rs))
    if hit is not None and hit[0] is rs:
        return hit[1]
    try:
        decls = rs.__egg_decls__
        out = []
        for decl in _rules_of(rs):
            r = _rule(decl, decls)
            if r is None:
                out = None
                break
            out.extend(r)
    except AttributeError:
        out = None
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[id(rs)] = (rs, out)  # (the entry holds the rule set: its id stays its own)
    return out


def live(rulesets: list, start: set) -> list[bool]:
    """Per rule set: whether any of its rules is in the closure from the tables `start`
    (module doc). Every rule set given takes part in the closure."""
    rules = []  # (index of its rule set, query, actions)
    for i, rs in enumerate(rulesets):
        t = rule_tables(rs) if isinstance(rs, Ruleset) else None
        if t is None:  # (a rule set not read here may fill any table)
            return [True] * len(rulesets)
        rules.extend((i, q, a) for q, a in t)
    have = set(start)
    on = [False] * len(rulesets)
    pending = rules
    while True:
        rest = []
        for i, q, a in pending:
            if q <= have:
                on[i] = True
                have |= a
            else:
                rest.append((i, q, a))
        if len(rest) == len(pending):
            return on
        pending = rest


def start_tables(terms) -> set:
    """The tables the build fills for these terms (`lang` ops of every node, and `BUILT`)."""
    out = set(BUILT)
    seen: set = set()
    stack = list(terms)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        out.add(n.op)
        stack.extend(a for a in n.args if isinstance(a, Node))
    return out
