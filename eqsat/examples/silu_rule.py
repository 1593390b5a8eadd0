"""SiLU recognized: `x * sigmoid(x)` is `silu(x)`, one op of a fused epilogue.

Preconditions: none. `silu(x)` means exactly `x * sigmoid(x)` (eqsat/lang.py; both
backends compute it so), so the rule holds on every input, NaN and inf included.

Before:  h = x @ w;  y = h * sigmoid(h)     one matmul kernel, epilogue ["mul", "sigmoid"]
After:   y = silu(x @ w)                     one matmul kernel, epilogue ["silu"]

The README's tutorial ("a new rule, end to end") walks through it:
    eqsat check-rules eqsat/examples/silu_rule.py
    eqsat.optimize(prog, shapes, rules=[*eqsat.rules.FAMILIES, "eqsat/examples/silu_rule.py"])
"""
from egglog import rewrite, ruleset

from eqsat.sorts import Sc


@ruleset
def ruleset(x: Sc):
    # x * sigmoid(x) -> silu(x), and with the factors the other way round
    yield rewrite(Sc.mul(x, Sc.fn("sigmoid", x))).to(Sc.fn("silu", x))
    yield rewrite(Sc.mul(Sc.fn("sigmoid", x), x)).to(Sc.fn("silu", x))
