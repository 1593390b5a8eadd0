"""How wide the generated kernels' memory accesses can be, and why (nvFuser #2169's
question, asked of every load and store of every kernel).

A Triton load is a vector of w floats (16 bytes at w = 4) when its addresses are
contiguous in runs of w and each run starts w-aligned, as far as Triton can prove at
compile time. What it can prove is what the launcher tells it: a stride equal to 1 is the
constant 1; any other stride is an argument, known "divisible by 16" only when it is
(else nothing is known about it); pointers of fresh tensors are 16-byte aligned; the
sizes eqsat bakes into the kernel (extents, the output's row length) are constants. So
an access gets width w when (1) one of its block axes walks a stride-1 axis of the
tensor, (2) every other stride is provably a multiple of w (a constant, or an argument
with the divisible-by-16 hint), and (3) the mask along that axis changes only at
multiples of w (the extent is a multiple of w). A matmul kernel adds two limits of the
layouts Triton picks on tensor cores: (4) on sm_90 wgmma reads tf32 operand tiles K-major
from shared memory, so a tile contiguous along M or N is copied in 4 bytes at a time; (5)
an epilogue vector loaded once per tile (`bias[j]`, `c[i]`) takes the accumulator's MMA
layout, where a thread holds 2 adjacent columns (a row vector: 8-byte loads at most) and
rows 8 apart (a column vector: scalar loads). `report(plan)` says which held for each
access; with `ptx=True` it also counts the vector instructions in the kernel's sm_90 PTX
compiled the same way (`triton_backend.ptx`), the ground truth on a GPU.
"""
from __future__ import annotations

import math

import re
from dataclasses import dataclass

from eqsat.plan import fused_prologue
from eqsat.terms import unlist, walk

from .triton_backend import _kernels, launch_strides

FLOAT = 4  # bytes


@dataclass
class Access:
    kernel: str
    role: str  # "operand a", "operand b", "prologue read", "epilogue read", "read", "store"
    tensor: str
    shape: tuple
    strides: tuple
    contiguous_axis: int | None
    width: int  # floats per access
    why: str

    def __str__(self) -> str:
        axis = "-" if self.contiguous_axis is None else str(self.contiguous_axis)
        return (f"{self.kernel:<14} {self.role:<13} {self.tensor:<18} shape {self.shape} strides {self.strides} "
                f"contiguous axis {axis}: {self.width} x f32 ({self.width * FLOAT} B): {self.why}")


def _width(strides: tuple, walked: list, extents: dict) -> tuple:
    """(contiguous axis, width, why) for a block access walking tensor axes `walked`."""
    unit = [a for a in walked if strides[a] == 1]
    if not unit:
        return None, 1, "no block axis walks a stride-1 axis (each element is its own access)"
    axis = unit[-1]
    others = [strides[a] for a in range(len(strides)) if a != axis]
    ext, short = extents.get(axis), ""
    for w in (4, 2):
        bad = [s for s in others if s % w or (s != 1 and s % 16)]
        if bad:
            continue
        if ext is not None and ext % w:  # the mask changes within a run of w: try a narrower one
            short = f"extent {ext} along axis {axis} is not a multiple of {w} (the mask breaks runs)"
            continue
        why = (f"stride 1 on axis {axis}; other strides {others} are multiples of 16 elements" if others
               else f"stride 1 on axis {axis}; 16-byte aligned base")
        return axis, w, why + (f"; {short}" if short else "")
    if short:
        return axis, 1, short
    bad = [s for s in others if s != 1 and s % 16]
    return axis, 1, (f"stride 1 on axis {axis}, but stride(s) {bad} are not multiples of 16 elements, so the "
                     f"launcher gives no alignment hint and each row may start anywhere")


def report(plan, ptx: bool = False, arch: int = 90) -> list:
    from eqsat.backends import triton_backend

    rows = []
    names = plan.names()
    for i, gk in enumerate(_kernels(plan)):
        term = gk.k.term
        mm = term if term.op == "Ten.matmul" else term.args[2] if term.op == "Ten.fused" else None
        roles = {}
        if mm is not None:
            for role, t in (("operand a", mm.args[0]), ("operand b", mm.args[1])):
                parts = fused_prologue(t, plan.costing)
                if parts is None:
                    roles[t] = role
                else:
                    for x in walk(parts[0].args[1]):
                        if x.op == "Sc.load":
                            roles.setdefault(x.args[0], "prologue read")
        for t in gk.inputs:
            shape = tuple(plan.costing.shape(t) or ())
            strides = tuple(launch_strides(plan, t) or ())
            role = roles.get(t, "epilogue read" if mm is not None else "read")
            if role in ("operand a", "operand b"):
                walked = [len(shape) - 2, len(shape) - 1]  # both tile axes
                extents = {len(shape) - 2: shape[-2], len(shape) - 1: shape[-1]}
            else:
                walked = _walked_axes(term, t)
                extents = {a: shape[a] for a in walked}
            axis, w, why = _width(strides, walked, extents) if strides else (None, 1, "strides unknown")
            if role in ("operand a", "operand b") and w > 1 and arch >= 90:
                k_axis = len(shape) - (1 if role == "operand a" else 2)
                if axis != k_axis:
                    w, why = 1, (f"contiguous along axis {axis}, not along K (axis {k_axis}): sm_90's wgmma reads "
                                 f"tf32 operands K-major from shared memory, so the tile is copied there 4 bytes "
                                 f"at a time (cp.async of 4 B)")
            elif role == "epilogue read" and term.op == "Ten.fused" and len(unlist(term.args[0])) == 2 and w > 1:
                # a load indexed by one tile axis only is a vector loaded once per tile
                # (triton_backend._Gen.vectors), in the accumulator's MMA layout sliced
                # along the other axis: a thread holds 2 adjacent columns, rows 8 apart
                vi, vj = (v for v, _ in unlist(term.args[0]))
                used = _loop_vars(term, t)
                if used == {vj} and w > 2:
                    w, why = 2, (f"{why}; a row vector loaded once per tile takes the accumulator's layout, where "
                                 f"each thread holds 2 adjacent columns (8-byte loads)")
                elif used == {vi}:
                    w, why = 1, ("a column vector loaded once per tile takes the accumulator's layout, where a "
                                 "thread's rows are 8 apart (each element its own load)")
            rows.append(Access(gk.name, role, names.get(t) or _short(t), shape, strides, axis, w, why))
        out_shape = tuple(gk.shape)
        # a matmul stores rows (their length sets the alignment); any other kernel stores
        # flat (`out + offs`, 4 consecutive elements a thread), so runs break only at the end
        n = out_shape[-1] if mm is not None else math.prod(out_shape)
        w = 4 if n % 4 == 0 else 2 if n % 2 == 0 else 1
        if mm is None:
            why = (f"stored flat, {n} elements (a multiple of {w}), 4 consecutive a thread" if w > 1 else
                   f"stored flat, {n} elements (odd): the mask breaks every run")
        else:
            why = (f"contiguous output, row length {n} (a constant) a multiple of {w}" if w > 1 else
                   f"row length {n} is odd: rows start unaligned")
        rows.append(Access(gk.name, "store", gk.k.name, out_shape, _contig(out_shape), len(out_shape) - 1, w, why))
        if ptx:
            text = triton_backend.ptx(plan, i, arch=arch)
            rows.append(PtxCounts(gk.name, arch, text))
    return rows


class PtxCounts:
    """The vector instructions actually in a kernel's PTX (per thread, each kind)."""

    def __init__(self, kernel: str, arch: int, text: str):
        self.kernel, self.arch = kernel, arch
        self.loads = {w: len(re.findall(rf"ld\.global{'' if w == 1 else f'.v{w}'}\.b32", text)) for w in (1, 2, 4)}
        self.stores = {w: len(re.findall(rf"st\.global{'' if w == 1 else f'.v{w}'}\.b32", text)) for w in (1, 2, 4)}
        self.async_copies = {int(b, 16): len(re.findall(rf"cp\.async\.\w+\.shared\.global [^;]*, 0x{b}[,;]", text))
                             for b in ("4", "8", "10")}

    def __str__(self) -> str:
        ld = ", ".join(f"{n} x {w * FLOAT} B" for w, n in self.loads.items() if n)
        st = ", ".join(f"{n} x {w * FLOAT} B" for w, n in self.stores.items() if n)
        cp = ", ".join(f"{n} x {b} B" for b, n in self.async_copies.items() if n)
        return (f"{self.kernel:<14} sm_{self.arch} PTX: global loads {ld or 'none'}; async copies to shared "
                f"{cp or 'none'}; stores {st or 'none'}")


def _walked_axes(term, t) -> list:
    """Axes of `t` that an elementwise or epilogue load indexes with a loop variable."""
    out = []
    for x in walk(term):
        if x.op == "Sc.load" and x.args[0] is t:
            for a, ix in enumerate(unlist(x.args[1])):
                if any(y.op == "Ix.v" for y in walk(ix)) and a not in out:
                    out.append(a)
    return sorted(out)


def _loop_vars(term, t) -> set:
    """The loop variables that the loads of `t` in `term` index with."""
    return {y.args[0] for x in walk(term) if x.op == "Sc.load" and x.args[0] is t
            for ix in unlist(x.args[1]) for y in walk(ix) if y.op == "Ix.v"}


def _contig(shape) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def _short(t) -> str:
    if t.op == "Ten.input":
        return t.args[0]
    return t.op.split(".", 1)[1]
