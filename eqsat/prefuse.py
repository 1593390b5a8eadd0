"""Single-use elementwise producers fused into their consumer before saturation.

A chain of elementwise statements written at tensor level (`h = relu(h * 0.9 + 0.1)`,
`h = h * 1.05 - 0.05`, ...) lowers to one computation per statement, each loading the one
before. The inline family fuses them in the e-graph, but there it makes a computation for
every contiguous segment of the chain, each segment's body renamed into its consumer's
variables: the e-graph grows with about the cube of the chain's length, and the node limit
stops a 50-statement chain with three kernels left.

This pass does, once and before saturation, what inline would end with where the choice
is not a choice: a producer `t = for[d] f` is fused into the one element of the one
consumer that reads it when
  1. `f` is elementwise (no reduction in it: inlining a reduction recomputes it),
  2. `t` is read exactly once in the whole program (one load, reached by one path, and `t`
     is no output and no side of a proven equality), and
  3. that load sits outside any reduction of its consumer and reads `t` at the consumer's
     own axis variables, each once, over the same extents (each element of `t` is then
     computed exactly once, where it is read).
Under those conditions the fused form does the same operations in one kernel fewer and
never writes or reads `t` (on the GPU targets the cost model rates it cheaper by a launch
and `t`'s traffic; on the CPU target a fused kernel may cross the size at which it runs
compiled, which the model prices by the loop rates: a 20-statement chain at 1024 x 1024
is modeled 7.39 ms fused against 7.53 ms as the e-graph split it, and runs in 12 ms
against 59); the e-graph still holds every other form the rules find from it. The walk carries a renaming of the
producer's variables into the consumer's, so a chain fuses in one pass, linear in its
length. It runs only where the inline family does (`optimize(rules=...)` without inline
leaves the program as lowered).
"""
from __future__ import annotations

from dataclasses import replace

from .terms import Node, free_vars, substitute, unlist, walk, walk_body


def prefuse(lowered):
    """`lowered` with single-use elementwise producers fused into their consumers (the
    same object where there is none)."""
    terms = list(lowered.roots) + [x for pair in lowered.unions for x in pair]
    uses: dict = {}
    seen: set = set()
    for t in terms:
        uses[t] = uses.get(t, 0) + 1
        for n in walk(t, seen):
            for a in n.args:
                if isinstance(a, Node):
                    uses[a] = uses.get(a, 0) + 1
    f = _Fuser(uses)
    roots = [f.tensor(r) for r in lowered.roots]
    unions = [(f.tensor(a), f.tensor(b)) for a, b in lowered.unions]
    if not f.fused:
        return lowered
    return replace(lowered, roots=roots, unions=unions)


class _Fuser:
    def __init__(self, uses: dict):
        self.uses = uses
        self.ten_memo: dict = {}
        self.memo: dict = {}
        self.envs: list = []  # every renaming made (kept alive: the memo is keyed by their ids)
        self.elementwise: dict = {}
        self.fused = 0

    def tensor(self, t: Node) -> Node:
        """A closed tensor term with the fusions inside it made."""
        got = self.ten_memo.get(t)
        if got is None:
            if t.op == "Ten.compute":
                dims = unlist(t.args[0])
                body = self.scalar(t.args[1], None, dims, self.uses.get(t.args[1], 0) == 1, False)
                got = t if body is t.args[1] else Node("Ten.compute", t.args[0], body)
            else:
                got = self._rebuild(t, None, (), False, False)
            self.ten_memo[t] = got
        return got

    def scalar(self, s: Node, env, dims: list, unique: bool, in_red: bool) -> Node:
        """`s` (a scalar or index term of a computation over `dims`, the computation's own
        variables renamed by `env`), with the fusions below it made. `unique`: `s` is
        reached by one path from its computation's body; `in_red`: inside a reduction."""
        key = (s, id(env), tuple(dims), unique, in_red)
        got = self.memo.get(key)
        if got is not None:
            return got
        op = s.op
        if op == "Ix.v":
            got = env.get(s.args[0], s) if env else s
        elif op == "Sc.load" and unique and not in_red and self.uses.get(s, 0) == 1 and \
                self._fusable(s.args[0], s.args[1], dims):
            p = s.args[0]
            idx = [self.scalar(i, env, dims, True, in_red) for i in unlist(s.args[1])]
            # (`p` may be open, inside its reader's loops: its free variables are the reader's,
            # renamed as the reader's are)
            renaming = {**env} if env else {}
            renaming.update((v, i) for (v, _), i in zip(unlist(p.args[0]), idx))
            self.envs.append(renaming)
            self.fused += 1
            got = self.scalar(p.args[1], renaming, unlist(p.args[0]), self.uses.get(p.args[1], 0) == 1, False)
        else:
            got = self._rebuild(s, env, dims, unique, in_red or op == "Sc.red")
        self.memo[key] = got
        return got

    def _rebuild(self, n: Node, env, dims, unique: bool, in_red: bool) -> Node:
        args = []
        for a in n.args:
            if not isinstance(a, Node):
                args.append(a)
            elif a.sort in ("Ten", "Tens"):
                if env and not free_vars(a).isdisjoint(env):
                    # a tensor inside a fused producer that reads the producer's own
                    # variables (`x[b] @ w` in `g = h + bias`, both local to a loop over b):
                    # renamed as the producer's scalars are
                    a = substitute(a, env)
                args.append(self.tensor(a) if a.sort == "Ten" else self._rebuild(a, None, (), False, False))
            elif a.sort in ("Sc", "Scs", "Ix", "Ixs"):
                args.append(self.scalar(a, env, dims, unique and self.uses.get(a, 0) == 1, in_red))
            else:
                args.append(a)
        return n if all(x is y for x, y in zip(args, n.args)) else Node(n.op, *args)

    def _fusable(self, p: Node, ixs: Node, dims: list) -> bool:
        """Conditions 1-3 of the module doc for a load of `p` at `ixs` in a computation over
        `dims` (the use count is checked by the caller)."""
        if p.op != "Ten.compute" or self.uses.get(p, 0) != 1:
            return False
        idx = unlist(ixs)
        pdims = unlist(p.args[0])
        if len(idx) != len(pdims) or len(idx) != len(dims) or any(i.op != "Ix.v" for i in idx):
            return False
        extent = dict(dims)
        read = [i.args[0] for i in idx]
        if len(set(read)) != len(read) or set(read) != set(extent):
            return False
        if any(extent[v] != e for v, (_, e) in zip(read, pdims)):
            return False
        ok = self.elementwise.get(p)
        if ok is None:
            ok = self.elementwise[p] = not any(x.op == "Sc.red" for x in walk_body(p.args[1]))
        return ok
