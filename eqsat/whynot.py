"""`plan.why_not(pattern)`: is a form the user expected in the plan, in the e-graph, or
nowhere, and why.

A pattern names kernels the way `print(plan)` shows them: `matmul+add+relu` is a matmul
kernel whose fused epilogue applies exactly add and relu (in any order); `relu>matmul`
one whose prologue applies relu to an operand; `matmul+*` any epilogue; `pointwise`,
`reduction`, `loop` the other kinds. Several kernels are separated by commas.

The answer for each kernel pattern, in the one cost model's terms:
- chosen: a kernel of the plan matches;
- found: a tensor e-node whose kernel (decoded as the plan would decode it) matches is in
  the e-graph; the plan forced to use it (that node for its class, the cheapest choice
  everywhere else) is priced against the chosen plan: how much more it costs;
- missing: the nearest form (same kind, most epilogue ops in common) and what it lacks,
  the rules that build the missing part and whether they fired, and the loop nests kept
  as written with the reason their dataflow gave.
The e-graph is not kept by a plan; it is rebuilt (the same saturation, deterministic).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import ArgumentError
from .lang import UNARY
from .plan import EPILOGUE_NAME, form_kernels

KINDS = ("matmul", "pointwise", "reduction", "loop")
_NAME = r"[A-Za-z_][A-Za-z_0-9]*"


@dataclass(frozen=True)
class KernelPattern:
    kind: str
    epilogue: frozenset | None  # None: any
    prologue: frozenset | None

    def matches(self, k) -> bool:
        if k.kind != self.kind:
            return False
        if self.epilogue is not None and frozenset(k.epilogue) != self.epilogue:
            return False
        return self.prologue is None or frozenset(k.prologue) == self.prologue

    def __str__(self) -> str:
        pro = "+".join(sorted(self.prologue)) + ">" if self.prologue else ""
        epi = "+*" if self.epilogue is None else "".join("+" + e for e in sorted(self.epilogue))
        return f"{pro}{self.kind}{epi}"


# the op names a kernel's epilogue or prologue lists (`plan.epilogue_ops`): the arithmetic
# table's and the language's functions
_OPS = frozenset(EPILOGUE_NAME.values()) | frozenset(UNARY) | {"neg"}


def parse(pattern: str) -> list:
    if not isinstance(pattern, str) or not pattern.strip():
        raise ArgumentError("why_not expects a pattern like 'matmul+add+relu' (kernels separated by commas)")
    out = []
    for part in pattern.split(","):
        text = part.strip().replace(" ", "")
        m = re.fullmatch(rf"(?:((?:{_NAME}\+)*{_NAME})>)?({_NAME})((?:\+(?:{_NAME}|\*))*)", text)
        if not m or m.group(2) not in KINDS:
            raise ArgumentError(f"cannot read kernel pattern {part.strip()!r}: write [ops>]kind[+op...], kind one "
                                f"of {', '.join(KINDS)}, e.g. 'matmul+add+relu' or 'relu>matmul'")
        ops = [o for o in m.group(3).split("+") if o]
        epi = None if "*" in ops else frozenset(ops)
        pro = frozenset(m.group(1).split("+")) if m.group(1) else None
        unknown = sorted((set(ops) - {"*"} | (pro or set())) - _OPS)
        if unknown:
            raise ArgumentError(f"kernel pattern {part.strip()!r}: no kernel has the op {unknown[0]!r}; ops are "
                                f"{', '.join(sorted(_OPS))}")
        out.append(KernelPattern(m.group(2), epi, pro))
    return out


@dataclass
class Answer:
    pattern: KernelPattern
    chosen: bool
    found: bool
    lines: list = field(default_factory=list)


@dataclass
class WhyNot:
    answers: list

    @property
    def chosen(self) -> bool:
        return all(a.chosen for a in self.answers)

    @property
    def found(self) -> bool:
        return all(a.found for a in self.answers)

    def __str__(self) -> str:
        out = []
        for a in self.answers:
            state = "chosen" if a.chosen else "in the e-graph, not chosen" if a.found else "not in the e-graph"
            out.append(f"{a.pattern}: {state}")
            out += [f"  {line}" for line in a.lines]
        return "\n".join(out)


def why_not(plan, pattern: str) -> WhyNot:
    pats = parse(pattern)
    answers = []
    forms = None
    for p in pats:
        hits = [k for k in plan.kernels if p.matches(k)]
        if hits:
            answers.append(Answer(p, True, True, [f"{k.name}: {k!r}" for k in hits]))
            continue
        if forms is None:
            forms = _forms(plan)
        answers.append(_explain_absent(plan, p, forms))
    return WhyNot(answers)


def _forms(plan) -> list:
    """(kernel, e-node, class, price of the best plan using it or None) for every tensor
    e-node that is a kernel, from the plan's e-graph rebuilt."""
    ext, roots = plan._reextract()
    out = []
    for cid, nodes in ext.g.classes.items():
        for n in nodes:
            if n.op not in ("Ten.matmul", "Ten.fused", "Ten.compute", "Ten.opaque") or n.id in ext.banned:
                continue
            try:
                ext.override = {cid: n}
                term = ext.decode(cid, {})
                kernels = form_kernels([term], plan.costing, plan.lowered.nests)
                price = None
                try:  # the outputs' cheapest plan with this node for its class, if it uses it
                    outs = [ext.decode(c, {}) for c in roots]
                    used = form_kernels(outs, plan.costing, plan.lowered.nests)
                    if any(_same_kernel(k, kernels[-1]) for k in used):
                        price = plan.costing.total(outs)
                except Exception:  # a cycle through the forced node
                    price = None
            except Exception:  # a node that does not decode on its own (a cycle through it)
                continue
            finally:
                ext.override = {}
            if kernels and (kernels[-1].term is term or (n.op == "Ten.opaque" and kernels[-1].kind == "loop")):
                out.append((kernels[-1], n, cid, price))
    return out


def _explain_absent(plan, p: KernelPattern, forms: list) -> Answer:
    matching = [f for f in forms if p.matches(f[0])]
    if matching:
        priced = [f for f in matching if f[3] is not None]
        lines = []
        if priced:
            k, n, cid, price = min(priced, key=lambda f: f[3])
            lines.append(f"the cheapest plan using it (e-class {_short(cid)}, {n.op}) costs {price * 1e6:.3f} us "
                         f"against {plan.cost * 1e6:.3f} us chosen ({price / plan.cost:.2f}x)" if plan.cost else
                         f"the cheapest plan using it costs {price * 1e6:.3f} us")
            if price < plan.cost * (1 - 1e-9):
                lines.append("it is cheaper: the extraction missed it (try extract='ilp')")
        else:
            k, n, cid, _ = matching[0]
            lines.append(f"e-class {_short(cid)} ({n.op}) holds it, but no output's plan would launch it "
                         f"as a kernel of its own (it is inside another form, e.g. a fused kernel, or "
                         f"not on a path from an output)")
        lines.append(f"its kernel alone: {k.cost * 1e6:.3f} us")
        return Answer(p, False, True, lines)
    lines = []
    same_kind = [f for f in forms if f[0].kind == p.kind]
    if same_kind:
        want = p.epilogue or frozenset()

        def score(f):
            have = frozenset(f[0].epilogue)
            return (len(have & want), -len(have ^ want))

        k, n, cid, _ = max(same_kind, key=score)
        have = frozenset(k.epilogue)
        miss, extra = sorted(want - have), sorted(have - want)
        desc = f"{'+'.join(k.prologue) + '>' if k.prologue else ''}{k.kind}" + "".join("+" + e for e in k.epilogue)
        lines.append(f"nearest: {desc} (e-class {_short(cid)})" + (f"; lacks {', '.join(miss)}" if miss else "")
                     + (f"; also applies {', '.join(extra)}" if extra else ""))
        if miss:
            lines += _rules_line(plan, "Ten.fused", "fusing an epilogue into a matmul")
    elif p.kind == "matmul":
        lines.append("no matmul anywhere in the e-graph")
        lines += _rules_line(plan, "Ten.matmul", "making a matmul")
    else:
        lines.append(f"no {p.kind} kernel anywhere in the e-graph")
    for nest in plan.lowered.nests.values():
        if nest.reason:
            lines.append(f"loop nest #{nest.id} is kept as written: {nest.reason}")
    return Answer(p, False, False, lines)


def _rules_line(plan, op: str, what: str) -> list:
    fired = plan.report.rule_matches
    table = plan._rule_table
    builders = [i.name for i in table.info.values() if op in i.heads]
    ran = [b for b in builders if fired.get(b)]
    from .rules import FAMILIES

    unused = [f for f in FAMILIES if f not in plan.rules]
    off = f"; families not in use: {', '.join(unused)}" if unused else ""
    if not builders:
        return [f"no rule in use builds {op} ({what}); rule sources: {', '.join(plan.rules) or 'none'}{off}"]
    if not ran:
        idle = sorted({i.family for i in table.info.values() if op in i.heads} & set(plan.report.not_run))
        why = (f"; not run: no rule of {', '.join(idle)} can match the ops this program has or its rules "
               f"make (eqsat/relevance.py)") if idle else ""
        return [f"the rules {what} never fired: {', '.join(builders[:4])}"
                + (f" (+{len(builders) - 4} more)" if len(builders) > 4 else "") + why + off]
    return [f"rules {what} fired ({', '.join(f'{b} x{fired[b]}' for b in ran[:4])}), but not on this form: "
            f"their preconditions (the rule files' docstrings) did not hold there"]


def _same_kernel(a, b) -> bool:
    return a.term is b.term if b.term is not None else (a.kind == "loop" and a.nest == b.nest)


def _short(cid: str) -> str:
    return cid.rsplit(".", 1)[-1]
