"""What the viewer and `Plan.explain()` show: the e-graph around the chosen form, each
alternative's modeled cost, and the rules that may have built each chosen e-node.

Read once, right after extraction, while the serialized e-graph is still at hand; the
Plan keeps only this bounded summary (at most `LIMIT` e-classes), not the e-graph.
"""
from __future__ import annotations

from collections import deque

from .extract import Extractor
from .provenance import AS_WRITTEN, PREFUSED, RuleTable
from .terms import Node, show, show_ix, show_var, unlist, walk

LIMIT = 400  # e-classes kept for the viewer, nearest the roots first


class View:
    def __init__(self, data: dict, node_cls: dict, written: set, table: RuleTable, fired: dict,
                 class_ops: dict, fused: set = frozenset()):
        self.data = data
        self._class_ops = class_ops
        self._node_cls, self._written, self._table, self._fired = node_cls, written, table, fired
        self._fused = fused

    def rules_for(self, n: Node) -> list:
        if n in self._written:
            return [AS_WRITTEN]
        if n in self._fused:
            return [PREFUSED]
        cid = self._node_cls.get(n)
        return self._table.candidates(n.op, self._fired, self._class_ops.get(cid))

    def provenance(self, kernels) -> list:
        """Per kernel, its tensor e-nodes (and rewritten scalar ones) top-down, with the
        rules that may have built each."""
        out = []
        outputs = {k.term for k in kernels if k.term is not None}
        for k in kernels:
            if k.kind == "loop":
                steps = [{"op": "loop nest", "class": None, "rules": [AS_WRITTEN]}]
            else:
                steps = []
                for n in _own_nodes(k.term, outputs):
                    # a fused epilogue's scalars are the program's own code around the
                    # accumulator: the fused node's step covers them
                    if n.sort == "Ten" or (n.sort == "Sc" and n in self._node_cls and n not in self._written):
                        steps.append({"op": n.op, "class": self._node_cls.get(n), "rules": self.rules_for(n)})
            out.append({"kernel": k.name, "steps": steps})
        return out


def _own_nodes(term: Node, outputs: set) -> list:
    """A kernel's nodes top-down, not entering other kernels' outputs (their own steps)."""
    out, seen, stack = [], set(), [term]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        out.append(n)
        if n is not term and n in outputs:
            continue
        stack.extend(reversed([a for a in n.args if isinstance(a, Node)]))
    return out


def _map_epilogue(node: Node, cid, choice: dict, node_cls: dict, written: set, written_ids: set,
                  chosen: dict) -> None:
    """Classes of a fused epilogue's decoded scalar terms (its in-context choices), which
    are the chosen e-nodes of those classes."""
    stack = [(node, cid)]
    while stack:
        n, c = stack.pop()
        entry = choice.get(c)
        if entry is None or entry[2] == "acc" or n in node_cls:
            continue
        enode = entry[2]
        node_cls[n] = c
        chosen.setdefault(c, (enode, n))
        if enode.id in written_ids:
            written.add(n)
        stack.extend((a, v) for (kind, v), a in zip(enode.args, n.args) if kind == "c" and isinstance(a, Node))


def _written_enodes(ext: Extractor, written_roots) -> set:
    """Ids of the e-nodes that are the program as written: its terms matched bottom-up to
    the e-graph (an e-node is its op and its children's classes, so each term has one)."""
    # leaves and mirrors by op and arguments (`Graph.unparented`); any other e-node is among
    # the parents of its first child class (an index of every e-node cost more than the
    # rest of the view on big e-graphs)
    leaves = {(n.op, n.args): n for n in ext.g.unparented}
    cls_of: dict = {}
    out = set()
    parents = ext.g.parents
    for r in written_roots:
        for t in _post_order(r):
            args = []
            for a in t.args:
                if isinstance(a, Node):
                    if a not in cls_of:
                        break
                    args.append(("c", cls_of[a]))
                else:
                    args.append(("p", a))
            else:
                args = tuple(args)
                first = next((v for kind, v in args if kind == "c"), None)
                if first is None:
                    n = leaves.get((t.op, args))
                else:
                    n = next((p for p in parents.get(first, ()) if p.op == t.op and p.args == args), None) \
                        or leaves.get((t.op, args))
                if n is not None:
                    cls_of[t] = n.cls
                    out.add(n.id)
    return out


def _post_order(root: Node) -> list:
    out, seen, stack = [], set(), [(root, False)]
    while stack:
        n, done = stack.pop()
        if done:
            out.append(n)
            continue
        if n in seen:
            continue
        seen.add(n)
        stack.append((n, True))
        stack.extend((a, False) for a in n.args if isinstance(a, Node))
    return out


def egraph_view(ext: Extractor, roots: list, written_roots, table: RuleTable, fired: dict,
                rename: dict | None = None, limit: int = LIMIT, fused_roots=None) -> View:
    """`written_roots`: the program as written, or None when that is what was chosen (then
    no e-node is marked chosen). Call with `ext` in its final state (its override set
    when the ILP's choice won). `rename`: decoded term -> the plan's term, where the plan's
    binders were renamed (eqsat/alpha.py). `fused_roots`: the program the e-graph started
    from where `eqsat/prefuse.py` fused some of it (its new e-nodes are labelled so)."""
    written = set()
    for r in written_roots or ():
        written.update(walk(r))
    written_ids = _written_enodes(ext, written_roots or ())
    fused_ids = _written_enodes(ext, fused_roots) - written_ids if fused_roots and written_roots else set()
    fused: set = set()
    node_cls: dict = {}
    chosen: dict = {}
    if written_roots is not None:
        memo: dict = {}
        for c in roots:
            ext.decode(c, memo)
        for cid, n in memo.items():
            node_cls.setdefault(n, cid)
        for cid in memo:
            pick = ext.override.get(cid) or (ext.best[cid][1] if cid in ext.best else None)
            if pick is not None:
                chosen[cid] = (pick, memo[cid])
                if pick.id in written_ids:
                    written.add(memo[cid])
                elif pick.id in fused_ids:
                    fused.add(memo[cid])
                if pick.op == "Ten.fused":  # its epilogue's scalars, chosen in context
                    _map_epilogue(memo[cid].args[1], pick.args[1][1], ext.epi_choice.get(pick.id, {}),
                                  node_cls, written, written_ids, chosen)
                if pick.op == "Ten.fused" and pick.args[2][1] in ext.mm_best:  # its product, decoded inline
                    inner, mm = memo[cid].args[2], ext.mm_best[pick.args[2][1]][1]
                    node_cls.setdefault(inner, mm.cls)
                    chosen.setdefault(mm.cls, (mm, inner))
                    if mm.id in written_ids:
                        written.add(inner)

    classes: dict = {}
    queue, seen = deque(roots), set(roots)
    while queue and len(classes) < limit:
        cid = queue.popleft()
        nodes = ext.g.classes.get(cid, ())
        if not nodes or cid in ext.small:
            continue
        entry = {"sort": nodes[0].sort, "chosen": None, "nodes": []}
        ops = {n.op for n in nodes}
        pick = chosen.get(cid)
        for i, n in enumerate(nodes):
            r = ext._node_info(n) if n.id not in ext.banned else None
            is_chosen = pick is not None and pick[0].id == n.id
            if is_chosen:
                entry["chosen"] = i
            rules = [AS_WRITTEN] if n.id in written_ids else [PREFUSED] if n.id in fused_ids else \
                table.candidates(n.op, fired, ops)
            args = []
            for kind, v in n.args:
                if kind == "p":
                    args.append({"text": repr(v)})
                elif v in ext.small:
                    args.append({"text": _structural_text(ext, v)})
                else:
                    args.append({"class": v})
                    if v not in seen:
                        seen.add(v)
                        queue.append(v)
            entry["nodes"].append({"op": n.op, "args": args, "cost": None if r is None else float(r[0]),
                                   "chosen": is_chosen, "rules": rules})
        classes[cid] = entry
    data = {"roots": list(roots), "classes": classes, "shown": len(classes),
            "total": sum(1 for c in ext.g.classes if c not in ext.small)}
    if rename:
        renamed: dict = {}
        for n, cid in node_cls.items():
            renamed.setdefault(rename.get(n, n), cid)
        node_cls = renamed
        written = written | {rename[n] for n in written if n in rename}
        fused = fused | {rename[n] for n in fused if n in rename}
    class_ops = {cid: {n.op for n in ext.g.classes.get(cid, ())} for cid in set(node_cls.values())}
    return View(data, node_cls, written, table, fired, class_ops, fused)


def _structural_text(ext: Extractor, cid) -> str:
    """Index structure as the program would write it: `i`, `i+1`, `[i, k]`, `(i<16, j<24)`."""
    try:
        t = ext.decode(cid, {})
    except Exception:  # a structural class that does not decode to one term: its id
        return cid
    if t.sort == "Var":
        return show_var(t)
    if t.sort == "Ix":
        return show_ix(t)
    if t.op in ("Ixs.cons", "Ixs.nil"):
        return "[" + ", ".join(show_ix(i) for i in unlist(t)) + "]"
    if t.op in ("Dims.cons", "Dims.nil"):
        return "(" + ", ".join(f"{show_var(v)}<{e}" for v, e in unlist(t)) + ")"
    return show(t)
