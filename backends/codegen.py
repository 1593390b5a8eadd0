"""What the generators of kernel source share: numbered temporaries, one statement a line,
index expressions, and a body's operands."""
from __future__ import annotations

import math

from eqsat.terms import python_number, walk


def literal(x: float) -> str:
    """A float as Python source (`float('-inf')`: '-inf' is no literal)."""
    x = float(x)
    return repr(x) if math.isfinite(x) else f"float('{x}')"


def loaded(term) -> list:
    """The tensors a kernel body loads, in first-load order (its input arguments)."""
    out = []
    for x in walk(term):
        if x.op == "Sc.load" and x.args[0] not in out:
            out.append(x.args[0])
    return out


def params(term) -> list:
    """The scalar parameters a kernel body reads, sorted (its scalar arguments)."""
    return sorted({x.args[0] for x in walk(term) if x.op == "Sc.param"})


class Emitter:
    """Lines of generated code at `indent`, each assigning a fresh temporary
    (`<prefix><n>`; `counter` is shared with the generators nested inside this one, so
    names never clash), and a memo of the terms already computed at this level."""

    def __init__(self, indent: str = "", prefix: str = "t", counter: list | None = None):
        self.indent, self.prefix = indent, prefix
        self.counter = counter if counter is not None else [0]
        self.lines: list = []
        self.memo: dict = {}
        self.py_memo: dict = {}  # (`py`)

    def tmp(self, text: str) -> str:
        name = f"{self.prefix}{self.counter[0]}"
        self.counter[0] += 1
        self.lines.append(f"{self.indent}{name} = {text}")
        return name

    def py(self, n) -> str:
        """A Python-number term (`terms.python_number`) as an expression in float64, as the
        reference computes it; each term once (`_py` writes it)."""
        got = self.py_memo.get(n)
        if got is None:
            got = self.py_memo[n] = self._py(n)
        return got

    def _py(self, n) -> str:
        raise NotImplementedError

    def sides(self, l, r) -> tuple:
        """A comparison's two sides: two Python numbers compare in float64, as in the
        reference, anything else in float32 (`sc`)."""
        if python_number(l) and python_number(r):
            return self.py(l), self.py(r)
        return self.sc(l), self.sc(r)

    def var(self, v) -> str:
        """The expression of loop or reduction variable `v` here."""
        raise NotImplementedError

    def wide_var(self, v) -> str:
        """`var(v)` in 64-bit integers (where variables are narrower: Triton's int32)."""
        return self.var(v)

    def ix(self, x, wide: bool = False) -> str:
        """An affine index term (`Ix.*`) as an expression; `wide`: its variables cast to
        64-bit first (`wide_var`), for an index used as a value."""
        op = x.op
        if op == "Ix.v":
            return self.wide_var(x.args[0]) if wide else self.var(x.args[0])
        if op == "Ix.lit":
            return str(int(x.args[0]))
        if op == "Ix.add":
            return f"({self.ix(x.args[0], wide)} + {self.ix(x.args[1], wide)})"
        if op == "Ix.scale":
            return f"({self.ix(x.args[0], wide)} * {int(x.args[1])})"
        raise NotImplementedError(f"index {op}")
