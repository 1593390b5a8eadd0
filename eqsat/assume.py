"""Plans that hold under an assumption checked when they run.

Some rewrites are exact only for some inputs: moving a triangular loop's mask onto one
factor of its product (`rules/finite.py`) turns a masked sum into a matmul, which differs
from the loop only where an input is infinite or NaN. `optimize()` never mixes such a
rewrite into the exact search (an e-class, once merged, cannot say which of its forms
needed the assumption). Where the program has a site for one (`has_site`), it searches a
second time with the assuming family added, and keeps that plan when the cost model rates
it cheaper than the exact plan with the check's own cost (`check_seconds`) added. The plan
returned is then the assuming one, with `plan.assumes` naming what it checks and
`plan.fallback` the exact plan; its runner (`Guarded`) checks the arguments on every call
and runs the fallback where the check fails, so a result is never the assumption's.

The check: every float argument (tensors and scalars) is finite. One pass over each
input; the family's precondition (the factor outside the mask is a load of an input)
makes it cover every value the rewrite relies on.
"""
from __future__ import annotations

import math

import numpy as np

from . import lang
from .terms import Node, walk

MARGIN = 0.9  # the assuming plan must be modeled at most this share of the exact plan's cost


def has_site(lowered) -> bool:
    """Does a lowered term hold a sum of a masked product (`sum[k] (x * y if c else 0.0)`),
    where the finite family could apply? (A cheap test before a second search.)"""
    seen: set = set()
    for root in list(lowered.roots) + [x for pair in lowered.unions for x in pair]:
        for n in walk(root, seen):
            if n.op == "Sc.red" and n.args[0] == "sum" and _masked_product(n.args[3]):
                return True
    return False


_ZERO = Node("Sc.lit", 0.0)


def _masked_product(s: Node) -> bool:
    """`x * y if c else 0.0` (or the other way round), also under further such masks."""
    if s.op != "Sc.select":
        return False
    a, b = s.args[3], s.args[4]
    return (b is _ZERO and (a.op == "Sc.mul" or _masked_product(a))) or \
        (a is _ZERO and (b.op == "Sc.mul" or _masked_product(b)))


def check_seconds(program, dims: dict, target) -> float:
    """What the check costs on the target: reading every float tensor argument once (and
    writing its flags), at the target's bandwidth."""
    elems = 0
    for p in program.params:
        if p.dtype is not int and p.shape:
            elems += math.prod(dims[d] if isinstance(d, str) else d for d in p.shape)
    return 2 * 4 * elems / target.bandwidth


def all_finite(values, dtypes=None) -> bool:
    """Every float in these arguments is finite once in its parameter's dtype (`dtypes`,
    default f32), as `args.bind_args` converts it: 1e39 in a float64 array, 1e300 as a
    Python float, 70000 for an f16 parameter are inf there (numpy arrays, torch tensors,
    scalars)."""
    for v, dt in zip(values, dtypes or [lang.f32] * len(values)):
        if hasattr(v, "is_floating_point") and hasattr(v, "isfinite"):  # a torch tensor, on any device
            if v.is_floating_point():
                if not _TORCH_DTYPE:
                    _torch_dtypes()
                want = _TORCH_DTYPE[dt.name]
                if not bool((v if v.dtype == want else v.to(want)).isfinite().all()):
                    return False
            continue
        a = np.asarray(v)
        if a.dtype.kind in "fc":
            if a.dtype != np.float32 or dt is not lang.f32:
                a = lang.round_to(a.real if a.dtype.kind == "c" else a, dt)  # (f32, then the narrower dtype)
            if not np.isfinite(a).all():
                return False
    return True


def nonzero_scalar(v, dtype) -> bool:
    """A scalar argument is not zero once in its parameter's dtype (1e-50 is 0 in f32)."""
    if hasattr(v, "item"):  # (a 0-d numpy array or torch tensor)
        v = v.item()
    return bool(lang.round_to(np.asarray(float(v)), dtype) != 0)


_TORCH_DTYPE: dict = {}  # dtype name -> torch dtype, filled on first use (torch is imported lazily)


def _torch_dtypes():
    import torch

    _TORCH_DTYPE.update(f32=torch.float32, f16=torch.float16, bf16=torch.bfloat16)


class Guarded:
    """A runner that checks on every call that the float arguments at `positions` are
    finite in their parameters' dtypes (`all_finite`): `fast` runs where they are, the
    runner `slow()` makes (on first need) where they are not, or where the check cannot
    read an argument (that runner refuses it, saying why). Two uses: a plan under the finite
    assumption falls back on the exact plan (`api.Plan.compiled`), and a plan of a program
    with float scalar parameters on the program as written, since the algebra family moves
    a scalar factor out of a sum (`sum[k] alpha * x[k] == alpha * sum[k] x[k]`): exact up to
    rounding for a finite alpha, not for an infinite one (a zero term gives NaN in the loop,
    the product alpha * sum gives inf; terms of both signs give NaN there, +-inf here).
    Checking the scalars costs nothing next to a call."""

    def __init__(self, fast, slow, positions: list, dtypes: list, how: str, nonzero: list = ()):
        self.fast, self._make_slow, self.positions, self.dtypes = fast, slow, positions, dtypes
        # positions (among `positions`) that must also be nonzero in their dtype: a divisor
        self.nonzero = [(i, dtypes[positions.index(i)]) for i in nonzero]
        self.plan = getattr(fast, "plan", None)
        self.how = how
        self._call = getattr(fast, "entry", fast)
        self._slow = None

    @property
    def source(self) -> str:
        """The source of the plan it runs where the arguments are finite."""
        return getattr(self.fast, "source", "")

    def __call__(self, args):
        try:
            ok = all_finite([args[i] for i in self.positions], self.dtypes) and \
                all(nonzero_scalar(args[i], dt) for i, dt in self.nonzero)
        except Exception:  # noqa: BLE001 - a call the fallback's runner will refuse, saying why
            ok = False
        if ok:
            return self._call(args)
        if self._slow is None:
            self._slow = self._make_slow()
        return self._slow(args)
