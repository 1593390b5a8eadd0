"""Rule names and provenance: which rules fired, and which may have built a chosen e-node.

Every rule gets a name: its own (`rule(..., name=...)`) or `<family>.<n>: <lhs> -> <rhs>`
from its position in its family and the heads of its two sides. egglog counts matches
per rule each run; `RuleTable.name` names each counted rule.

Provenance is read from the e-graph, not replayed: a chosen e-node that is part of the
program as written is "as written"; any other one was built by a rule whose right-hand
side constructs its op. Among the rules that fired, those are the candidates, with the
rules whose right-hand side *is* that op (its head) first. egglog 13 records no proofs,
so when several fired rules construct the same op, all of them are named.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from egglog import Ruleset

AS_WRITTEN = "as written"
# an e-node of the program as the e-graph started from it, made by fusing elementwise
# producers read once into their readers before saturation (`eqsat/prefuse.py`)
PREFUSED = "prefuse: fused before saturation (inline's sure work)"


@dataclass(frozen=True)
class RuleInfo:
    name: str
    family: str
    heads: frozenset  # ops at the top of its right-hand sides
    builds: frozenset  # every constructor op on its right-hand sides
    lhs: str | None  # the op its left-hand side (or first pattern) starts with


def _op_name(callable_ref) -> str | None:
    method = getattr(callable_ref, "method_name", None)
    ident = getattr(callable_ref, "ident", None)
    if ident is None:
        return None
    return f"{ident.name}.{method}" if method else ident.name


def _calls(x, out: list) -> list:
    """Every call's op in a declaration tree, outermost first."""
    if isinstance(x, (tuple, list)):
        for y in x:
            _calls(y, out)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        if type(x).__name__ == "CallDecl":
            name = _op_name(x.callable)
            if name:
                out.append(name)
        for f in dataclasses.fields(x):
            if f.name not in ("tp", "callable"):
                _calls(getattr(x, f.name), out)
    return out


def _sides(decl) -> tuple[list, list]:
    """(left-hand side calls, [right-hand side call trees]) of a rewrite or a rule."""
    kind = type(decl).__name__
    if kind == "RewriteDecl":
        return _calls(decl.lhs, []), [_calls(decl.rhs, [])]
    lhs = _calls(getattr(decl, "body", ()), [])
    rhs = []
    for action in getattr(decl, "head", ()):
        if type(action).__name__ == "UnionDecl":
            rhs.append(_calls(action.rhs, []))
        elif type(action).__name__ in ("LetDecl", "ExprActionDecl", "SetDecl"):
            rhs.append(_calls(action, []))
    return lhs, rhs


def _rules_of(ruleset: Ruleset) -> list:
    decls = ruleset.__egg_decls__
    rs = decls._rulesets.get(ruleset.ident)
    return list(rs.rules) if rs is not None else []


class RuleTable:
    """Names for the rules of the rule sets in use, keyed by their declarations."""

    def __init__(self, named_rulesets: list, constructors):
        self.info: dict = {}
        self._constructors = frozenset(constructors)
        for family, rs in named_rulesets:
            if not isinstance(rs, Ruleset):
                continue
            try:
                decls = _rules_of(rs)
            except AttributeError:  # another egglog-python layout: counts stay unnamed
                continue
            for i, decl in enumerate(decls):
                if decl in self.info:
                    continue
                lhs, rhs = _sides(decl)
                heads = frozenset(r[0] for r in rhs if r and r[0] in constructors)
                builds = frozenset(op for r in rhs for op in r if op in constructors)
                name = getattr(decl, "name", None)
                if not name:
                    left = lhs[0] if lhs else "?"
                    right = ", ".join(sorted(heads)) or (rhs[0][0] if rhs and rhs[0] else "facts")
                    name = f"{family}.{i}: {left} -> {right}"
                self.info[decl] = RuleInfo(name, family, heads, builds, lhs[0] if lhs else None)
        self._building: dict = {}  # op -> the rules that build it (asked once per chosen e-node)
        for info in self.info.values():
            for op in info.builds:
                self._building.setdefault(op, []).append(info)

    def name(self, decl) -> str:
        info = self.info.get(decl)
        return info.name if info else f"(unnamed {type(decl).__name__})"

    def candidates(self, op: str, fired: dict, class_ops=None) -> list:
        """Rules that fired and construct `op`. A rule whose right-hand side *is* `op` made
        that node equal to what its left-hand side matched, so when `class_ops` (the ops in
        the node's e-class) is given, such a rule must find its left-hand op there. Rules
        with `op` at the head, when any fired, else rules that build it inside a term."""
        heads, inner = [], []
        for info in self._building.get(op, ()):
            if not fired.get(info.name):
                continue
            if op in info.heads:
                if class_ops is None or info.lhs is None or info.lhs not in self._constructors \
                        or info.lhs in class_ops:
                    heads.append(info.name)
            else:
                inner.append(info.name)
        return sorted(heads) if heads else sorted(inner)
