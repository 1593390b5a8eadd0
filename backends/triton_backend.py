"""The Triton backend: each matmul, elementwise and reduction kernel of a Plan becomes a
`@triton.jit` kernel; a loop nest kept as written runs on the host (through the numpy
backend), as it has no parallel form.

- matmul kernels are tiled (BLOCK_M x BLOCK_N output tiles, a K loop of `tl.dot`), batched
  over a third grid axis; the epilogue is evaluated on the accumulator tile in registers
  and stored once (nothing else is written); the tile sizes are `tuning.DEFAULT` without a
  GPU, and tuned per shape on one (`backends/tuning.py`);
- elementwise kernels cover the output with 1-D blocks; a reduction kernel with 2-D
  blocks, XBLOCK outputs by RBLOCK lanes of the reduced axis: each lane accumulates its
  share, the lanes are combined with tl.sum/max/min (a tree, `cost.lanes`), and a
  reduction nested inside another runs as a loop in each lane;
- a load whose index may leave its tensor (only where a select drops the value, after
  if-conversion widened a loop) is masked by its bounds: loads are total.

Sizes are baked into the source: a plan is specialized to the sizes it was optimized for.
Without a GPU, kernels run through Triton's interpreter (TRITON_INTERPRET=1) on torch CPU
tensors; the environment variable must be set before triton is first imported.
"""
from __future__ import annotations

import math
import os
import re

from eqsat import lang
from eqsat.cost import GPU_RED_LANES, pow2
from eqsat.plan import fused_prologue
from eqsat.terms import Node, is_negative_zero, leaving_axes, python_number, unlist, viewed_input

from . import numpy_backend
from .codegen import Emitter, literal, loaded, params
from .tuning import DEFAULT


_BITS = {"tl.float32": ("tl.int32", -2**31), "tl.float64": ("tl.int64", -2**63)}


def negative_zero(shape: str = "()", dtype: str = "tl.float32") -> str:
    """-0.0 in kernel source, made from its bits: compiled for a GPU (Triton 3.6 on an H200),
    a literal -0.0 and `tl.full(shape, -0.0, ...)` came out as +0.0 (x * -0.0 lost its sign,
    and a store's `+ -0.0` turned every -0.0 it stored into 0.0), which the interpreter hid."""
    ity, bits = _BITS[dtype]
    return f"tl.full({shape}, {bits}, {ity}).to({dtype}, bitcast=True)"


def float_literal(x: float) -> str:
    """A float32 constant in kernel source (`codegen.literal`; -0.0 by its bits), rounded
    to float32 here: Triton folds an operation of two constants in float64, so
    `float32(1e39) / 4.0` would be 2.5e38 where numpy's is inf."""
    x = float(lang.rounded(x))
    return negative_zero() if is_negative_zero(x) else literal(x)

# elements per program of an elementwise or reduction kernel: with Triton's default 4 warps
# (128 threads) each thread holds 4 consecutive elements, so contiguous loads and the flat
# store are 16-byte vectors (at 128 every thread held one: all scalar, checked in sm_90 PTX)
BLOCK = 512
# the 16-bit dtypes whose matmul operand pairs are dotted as they are stored (tensor cores,
# f32 accumulation); Triton's interpreter multiplies bf16 tiles as their integer bit
# patterns, so there bf16 operands are widened to f32 first (DOT16_INTERPRETED)
DOT16 = ("f16", "bf16")
DOT16_INTERPRETED = ("f16",)
BM, BN, BK = DEFAULT.block_m, DEFAULT.block_n, DEFAULT.block_k  # matmul tiles without tuning (tuning.py)

_BIN = {"Sc.add": "({} + {})", "Sc.sub": "({} - {})", "Sc.mul": "({} * {})", "Sc.div": "({} / {})",
        # Python's builtin max/min: `b if b > a else a` (a NaN in b keeps a)
        "Sc.max": "tl.where({1} > {0}, {1}, {0})", "Sc.min": "tl.where({1} < {0}, {1}, {0})"}


def _ident(v: Node) -> str:
    return "v_" + re.sub(r"\W", "_", v.args[0])


class _Gen(Emitter):
    """Scalar terms to Triton statements; `shape` is the block shape of every value."""

    def __init__(self, var_expr: dict, shape: str, operands: dict, indent: str = "    ", mask: str = "mask",
                 prefix: str = "t", vectors: dict | None = None, tree: bool = False, counter: list | None = None,
                 extents: dict | None = None):
        self.var_expr = var_expr  # Var node -> Triton index expression
        self.extents = extents or {}  # Var node -> its extent (to see which loads may leave)
        # reductions as trees: the values are (XBLOCK, 1) blocks, a reduction runs over
        # (XBLOCK, RBLOCK) blocks of its axis and combines the lanes with tl.sum/max/min;
        # otherwise (inside a tree, in a matmul epilogue) a reduction is a loop per element
        self.tree = tree
        # block index expression -> (its 1-D form, how to broadcast it back, its 1-D mask): a
        # load that only one of them indexes is loaded once per tile as a vector
        self.vectors = vectors or {}
        self.shape = shape
        self.mask = mask
        self.operands = operands  # tensor node -> (pointer arg name, [stride arg names], shape)
        super().__init__(indent, prefix, counter)

    def inner(self, v: Node, expr: str, ext: int, shape: str, mask: str) -> "_Gen":
        """A generator for the body of a reduction over `v`, one level deeper."""
        return _Gen({**self.var_expr, v: expr}, shape, self.operands, self.indent + "    ", mask, self.prefix,
                    counter=self.counter, extents={**self.extents, v: ext})

    def var(self, v: Node) -> str:
        return self.var_expr[v]

    def wide_var(self, v: Node) -> str:
        # (a loop's own variable may be a plain int: a sum with an int64 zero widens both kinds)
        return f"({self.var_expr[v]} + tl.zeros([1], tl.int64))"

    def sc(self, n: Node) -> str:
        got = self.memo.get(n)
        if got is not None:
            return got
        op = n.op
        if op != "Sc.lit" and python_number(n):  # computed in float64, rounded once (terms.python_number)
            out = self.tmp(f"({self.py(n)}).to(tl.float32)")
        elif op == "Sc.lit":
            out = float_literal(n.args[0])
        elif op == "Sc.param":
            # a tensor, not the argument itself: Triton's interpreter passes a float
            # parameter as a Python float, whose 1.0 / 0.0 raises where the GPU's fp32
            # gives inf (times 1.0: exact, -0.0 and NaN too)
            out = self.tmp(f"p_{n.args[0]} * tl.full((), 1.0, tl.float32)")
        elif op == "Sc.acc":
            out = "acc"
        elif op == "Sc.load":
            ptr, strides, shape, widen = self.operands[n.args[0]]
            terms = unlist(n.args[1])
            idx = [self.ix(i) for i in terms]
            off = " + ".join(f"({i}) * {s}" for i, s in zip(idx, strides)) or "0"
            # an index that may leave its axis (only where a select drops the value) is
            # masked there: loads are total (eqsat/terms.py), and never touch other memory
            inside = "".join(f" & ({idx[a]} >= 0) & ({idx[a]} < {shape[a]})"
                             for a, _ in leaving_axes(terms, shape, self.extents.__getitem__))
            atoms = {a for a in self.var_expr.values() if any(a in i for i in idx)}
            if len(atoms) == 1 and next(iter(atoms)) in self.vectors:  # a row or column vector
                atom = next(iter(atoms))
                flat, back, vmask = self.vectors[atom]
                vmask = f"({vmask}){inside.replace(atom, flat)}" if inside else vmask
                out = self.tmp(f"tl.load({ptr} + {off.replace(atom, flat)}, mask={vmask}, other=0.0){widen}{back}")
            else:
                # broadcast the offset to the block: an element every lane shares is a scalar offset
                mask = f"({self.mask}){inside}" if inside else self.mask
                out = self.tmp(f"tl.load({ptr} + {off} + tl.zeros({self.shape}, tl.int32), mask={mask}, "
                               f"other=0.0){widen}")
        elif op in _BIN:
            out = self.tmp(_BIN[op].format(self.sc(n.args[0]), self.sc(n.args[1])))
        elif op == "Sc.fn" and n.args[0] == "float32":
            out = self.sc(n.args[1])  # (sc rounds a Python number to float32: numpy's np.float32)
        elif op == "Sc.fn":
            out = self.tmp(_fn(n.args[0], self.sc(n.args[1])))
        elif op == "Sc.select":
            cmp, l, r, a, b = n.args
            # (two Python numbers compare in float64, as in the reference)
            lv, rv = self.sides(l, r)
            out = self.tmp(f"tl.where({lv} {cmp} {rv}, {self.sc(a)}, {self.sc(b)})")
        elif op == "Sc.red":
            out = self.tree_reduction(n) if self.tree else self.chain_reduction(n)
        else:
            raise NotImplementedError(op)
        self.memo[n] = out
        return out

    def _py(self, n: Node) -> str:
        """A Python-number term (`terms.python_number`) in float64, as the reference
        computes it (a function of one: the language's float32 function, widened)."""
        op = n.op
        if op == "Sc.lit":  # (an exact float64 constant: a bare literal would be a float32 one)
            x = n.args[0]
            out = self.tmp(negative_zero("[1]", "tl.float64") if is_negative_zero(float(x)) else f"tl.full([1], {literal(x)}, tl.float64)")
        elif op == "Sc.idx":  # (in int64, as the reference: `(i * M + j) * 100000` passes int32)
            out = self.tmp(f"(({self.ix(n.args[0], wide=True)}) + tl.zeros({self.shape}, tl.int64)).to(tl.float64)")
        elif op in _BIN:
            out = self.tmp(_BIN[op].format(self.py(n.args[0]), self.py(n.args[1])))
        elif op == "Sc.fn" and n.args[0] == "float":  # (Python's float(e): an element widened)
            x = n.args[1]
            # (added to float64 -0.0, exact: `sc` may give a Python literal, which has no `.to`)
            out = self.py(x) if python_number(x) else \
                self.tmp(f"({negative_zero(self.shape, 'tl.float64')} + {self.sc(x)})")
        elif op == "Sc.fn" and n.args[0] == "neg":  # (in float64: not `-x`, see `_fn`)
            out = self.tmp(f"({self.py(n.args[1])} * -1.0)")
        elif op == "Sc.fn" and n.args[0] in lang.WIDE:  # (in float64, as math's and numpy's of a float)
            out = self.tmp(_fn64(n.args[0], self.py(n.args[1])))
        elif op == "Sc.fn":
            out = self.tmp(f"({_fn(n.args[0], f'({self.py(n.args[1])}).to(tl.float32)')}).to(tl.float64)")
        elif op == "Sc.select":
            cmp, l, r, a, b = n.args
            lv, rv = self.sides(l, r)
            out = self.tmp(f"tl.where({lv} {cmp} {rv}, {self.py(a)}, {self.py(b)})")
        else:
            raise NotImplementedError(f"{op} as a Python number")
        return out


    def chain_reduction(self, n: Node) -> str:
        """A reduction as a loop over its axis, one step per iteration, in every lane."""
        kind, v, ext, body = n.args
        r = self.tmp(f"tl.full({self.shape}, {_INIT[kind]}, tl.float32)")
        name = _ident(v)
        self.lines.append(f"{self.indent}for {name} in range({ext}):")
        inner = self.inner(v, name, ext, self.shape, self.mask)
        b = inner.sc(body)
        self.lines += inner.lines + [f"{self.indent}    {r} = {_step(kind, r, b)}"]
        return r

    def tree_reduction(self, n: Node) -> str:
        """A reduction over RBLOCK lanes of its axis at a time, each lane accumulating its
        share, then the lanes combined (tl.sum/max/min). A max or min step skips NaN, so
        the partial results hold none and the lanes combine in any order to the same
        value; masked-off lanes keep the initial value."""
        kind, v, ext, body = n.args
        r = self.tmp(f"tl.full((XBLOCK, RBLOCK), {_INIT[kind]}, tl.float32)")
        name = _ident(v)
        rmask = f"{name}_mask"
        self.lines += [f"{self.indent}for {name}_0 in range(0, {ext}, RBLOCK):",
                       f"{self.indent}    {name} = {name}_0 + lanes",
                       f"{self.indent}    {rmask} = {self.mask} & ({name} < {ext})"]
        inner = self.inner(v, name, ext, "(XBLOCK, RBLOCK)", rmask)
        b = inner.sc(body)
        self.lines += inner.lines + [f"{self.indent}    {r} = tl.where({rmask}, {_step(kind, r, b)}, {r})"]
        return self.tmp(f"tl.{kind}({r}, 1)[:, None]")


_INIT = {"sum": "0.0", "max": "float('-inf')", "min": "float('inf')"}


def _step(kind: str, acc: str, x: str) -> str:
    """One reduction step; max and min skip NaN (Python's max(m, e) keeps m when e is NaN)."""
    return {"sum": f"{acc} + {x}", "max": f"tl.where({x} > {acc}, {x}, {acc})",
            "min": f"tl.where({x} < {acc}, {x}, {acc})"}[kind]


def _fn(name: str, x: str) -> str:
    """A function of the language on a Triton value, with `eqsat.lang`'s IEEE behaviour:
    NaN stays NaN (so no `tl.maximum` and no clamping of arguments, which drop it), and the
    infinities give what the reference's formulas give (sigmoid(-inf) = 0, silu(-inf) = NaN,
    tanh(+-inf) = +-1: `exp` overflowing to inf is what makes them)."""
    sig = f"(1.0 / (1.0 + tl.exp(-{x})))"
    if name == "relu":
        return f"tl.where({x} <= 0.0, 0.0, {x})"  # (-0.0 too: numpy's maximum(-0.0, 0) is 0.0)
    if name == "neg":  # (not `-x`: Triton 3.6 compiles it as 0.0 - x, whose -(0.0) is 0.0)
        return f"({x} * -1.0)"
    if name == "exp":
        return f"tl.exp({x})"
    if name == "sqrt":  # (correctly rounded: `tl.sqrt` is sqrt.approx.ftz on sm_90, 0.0 for a subnormal)
        return f"tl.sqrt_rn({x})"
    if name == "log":
        return f"tl.log({x})"
    if name == "sin":
        return f"tl.sin({x})"
    if name == "cos":
        return f"tl.cos({x})"
    if name == "abs":
        return f"tl.abs({x})"
    if name == "sigmoid":
        return sig
    if name == "silu":
        return f"({x} * {sig})"
    if name == "tanh":
        return _tanh(x)
    if name == "gelu":
        u = f"(0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x}))"
        return f"(0.5 * {x} * (1.0 + {_tanh(u)}))"
    raise NotImplementedError(name)


def _fn64(name: str, x: str) -> str:
    """One of `lang.WIDE` on a float64 Triton value (libdevice's on a GPU; sqrt
    correctly rounded). tanh through exp, with tanh(x) = x (1 - x^2 / 3) below |x| = 1e-4,
    where the exp form cancels (relative error there under 4e-9; above, ~1e-12)."""
    if name == "tanh":
        return (f"tl.where(tl.abs({x}) < 1e-4, {x} * (1.0 - {x} * {x} / 3.0), "
                f"2.0 / (1.0 + tl.exp(-2.0 * {x})) - 1.0)")
    return f"tl.{name}({x})"


def _tanh(x: str) -> str:
    """tanh as `vector_math.tanhf` computes it: below |x| = 0.625 an odd polynomial, x (1 +
    z p(z)) with z = x^2 (exact to a few ulp near 0, -0.0 kept), above it through exp (2 /
    (1 + inf) - 1 = -1 where exp(-2x) overflows; NaN stays NaN). The exp form alone lost
    every digit near 0 (tanh(1e-8) was 0.0)."""
    z = f"({x} * {x})"
    p = (f"((((-5.70498872745e-3 * {z} + 2.06390887954e-2) * {z} - 5.37397155531e-2) * {z} "
         f"+ 1.33314422036e-1) * {z} - 3.33332819422e-1)")
    return f"tl.where(tl.abs({x}) < 0.625, {x} * ({p} * {z} + 1.0), 2.0 / (1.0 + tl.exp(-2.0 * {x})) - 1.0)"


def _outer_reductions(term: Node) -> list:
    """The reductions of a body that no other reduction holds (each node visited once; the
    tensors it loads are other kernels, not entered)."""
    out, stack, seen = [], [term], set()
    while stack:
        x = stack.pop()
        if not isinstance(x, Node) or x in seen or x.sort in ("Ten", "Tens"):
            continue
        seen.add(x)
        if x.op == "Sc.red":
            out.append(x)
        else:
            stack.extend(x.args)
    return out


class Kernel:
    """One generated kernel: its source, its argument list, its grid. `grid` and `meta` are
    the default launch; a matmul kernel's `gemm_size` = (M, N, batch) lets a tuned config
    (`backends/tuning.py`) compute its own grid. Elementwise kernels: `gemm_size` is None."""

    gemm_size = None

    def __init__(self, k, plan, precision: str, dot16=DOT16):
        self.k = k
        self.dot16 = dot16
        self.ranks = _Ranks(plan)  # tensor term -> shape (its length is the rank)
        self.narrow = _narrow_params(plan)
        self.plan = plan
        self.precision = precision
        term = k.term
        self.name = k.name
        self.shape = tuple(e for _, e in unlist(term.args[0])) if term.op != "Ten.matmul" else plan.costing.shape(term)
        if term.op == "Ten.matmul":
            self._matmul(term, None, plan)
        elif term.op == "Ten.fused":
            self._matmul(term.args[2], term, plan)
        else:
            self._elementwise(term)

    def _operands(self) -> dict:
        """Each input tensor -> (its pointer argument, its stride arguments, its shape, what
        widens a loaded value to f32: "" for an f32 tensor)."""
        return {t: (f"in{i}", [f"in{i}_s{d}" for d in range(len(self.ranks[t]))], self.ranks[t],
                    ".to(tl.float32)" if self.stored(t) in ("f16", "bf16") else "")
                for i, t in enumerate(self.inputs)}

    def stored(self, t: Node) -> str | None:
        """"f16" or "bf16" where tensor `t` is (a view of) a parameter the runner keeps that
        narrow on the device (`TritonCompiled._input_to_device`); "f64" for a scalar a kept
        nest leaves holding a Python number (`lower.Nest.numbers`: read only as that number,
        `float(s)`, in float64); None for f32 (every other kernel output and loop result)."""
        if numpy_backend.number_output(self.plan, t):
            return "f64"
        return self.narrow.get(viewed_input(t))

    def _elementwise(self, term: Node):
        dims = unlist(term.args[0])
        body = term.args[1]
        self.inputs = loaded(body)
        self.params = params(body)
        ops = self._operands()
        total = math.prod(self.shape)
        var_expr, inner = {}, 1
        for v, e in reversed(dims):
            var_expr[v] = f"((offs // {inner}) % {e})"
            inner *= e
        reds = _outer_reductions(body)
        args = ", ".join(["out"] + [a for t in self.inputs for a in [ops[t][0], *ops[t][1]]]
                         + [f"p_{p}" for p in self.params])
        if not reds:
            g = _Gen(var_expr, "(BLOCK,)", ops, extents=dict(dims))
            val = g.sc(body)
            lines = ["@triton.jit", f"def {self.name}({args}, BLOCK: tl.constexpr):",
                     "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
                     f"    mask = offs < {total}"] + g.lines + [
                     f"    tl.store(out + offs, {val} + {negative_zero('(BLOCK,)')}, mask=mask)"]
            self.grid = (max(1, -(-total // BLOCK)),)
            self.meta = {"BLOCK": BLOCK}
        else:
            # (XBLOCK outputs) x (RBLOCK lanes of a reduced axis); about BLOCK * 4 values a block
            rblock = min(pow2(max(r.args[2] for r in reds)), GPU_RED_LANES)  # cost.lanes on a GPU target
            xblock = max(1, min(pow2(total), (4 * BLOCK) // rblock))
            g = _Gen(var_expr, "(XBLOCK, 1)", ops, tree=True, extents=dict(dims))
            val = g.sc(body)
            lines = ["@triton.jit", f"def {self.name}({args}, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):",
                     "    offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]",
                     f"    mask = offs < {total}",
                     "    lanes = tl.arange(0, RBLOCK)[None, :]"] + g.lines + [
                     f"    tl.store(out + offs, {val} + {negative_zero('(XBLOCK, 1)')}, mask=mask)"]
            self.grid = (max(1, -(-total // xblock)),)
            self.meta = {"XBLOCK": xblock, "RBLOCK": rblock}
        self.source = "\n".join(lines)

    def _matmul(self, mm: Node, fused: Node | None, plan):
        a, b = mm.args
        sa = self.ranks[a]
        out_shape = self.shape
        batch = out_shape[0] if len(out_shape) == 3 else 1
        M, N, K = out_shape[-2], out_shape[-1], sa[-1]
        body = fused.args[1] if fused is not None else Node("Sc.acc")
        self.inputs = []
        # an operand with a prologue is read through its own inputs; what the epilogue loads
        # is read as it is (an elementwise tensor there is another kernel's result: a
        # pointwise kernel's output added to the product must not be taken for a prologue)
        pro = {t: fused_prologue(t, plan.costing) for t in (a, b)}  # operand -> (compute, perm) or None
        operand_inputs = []
        for t in (a, b):
            operand_inputs += loaded(pro[t][0].args[1]) if pro[t] is not None else [t]
        for u in operand_inputs + loaded(body):
            if u not in self.inputs:
                self.inputs.append(u)
        self.params = sorted(set(params(body)).union(*[params(p[0].args[1]) for p in pro.values() if p]))
        ops = self._operands()
        dims = unlist(fused.args[0]) if fused is not None else []
        var_expr = {}
        names = ["pid_b", "rm[:, None]", "rn[None, :]"] if len(dims) == 3 else ["rm[:, None]", "rn[None, :]"]
        for (v, _), e in zip(dims, names):
            var_expr[v] = e
        vectors = {} if len(dims) == 3 else {"rm[:, None]": ("rm", "[:, None]", f"rm < {M}"),
                                             "rn[None, :]": ("rn", "[None, :]", f"rn < {N}")}
        g = _Gen(var_expr, "(BLOCK_M, BLOCK_N)", ops, vectors=vectors, extents=dict(dims))
        val = g.sc(body)
        tiles = []
        # two operands loaded as they are, both f16 (or both bf16): a 16-bit tensor-core dot
        # accumulating in f32 (their products are exact in f32, as in the reference); any
        # other pair is widened to f32 and dotted at `precision`
        dot16 = pro[a] is None and pro[b] is None and self.stored(a) in self.dot16 and self.stored(a) == self.stored(b)
        for name, t, rows, cols in (("a", a, "rm", "ka"), ("b", b, "ka", "rn")):
            extent = {"rm": M, "rn": N, "ka": K}
            tile_mask = f"({rows}[:, None] < {extent[rows]}) & ({cols}[None, :] < {extent[cols]})"
            parts = pro[t]
            if parts is not None:  # evaluated on the tile as it is loaded (a fused prologue)
                comp, perm = parts
                axes = [v for v, _ in unlist(comp.args[0])]
                at = (["pid_b"] if len(axes) == 3 else []) + [f"{rows}[:, None]", f"{cols}[None, :]"]
                # axis a of the operand is axis perm[a] of the computation
                pg = _Gen({axes[perm[k]]: e for k, e in enumerate(at)},
                          "(BLOCK_M, BLOCK_K)" if name == "a" else "(BLOCK_K, BLOCK_N)", ops,
                          "        ", f"{name}_mask", f"{name}p", extents=dict(unlist(comp.args[0])))
                val_t = pg.sc(comp.args[1])
                tiles += [f"        {name}_mask = {tile_mask}"] + pg.lines + [
                    f"        {name} = tl.where({name}_mask, {val_t}, 0.0)"]
            else:
                s_ = ops[t][1]
                bb = f"pid_b * {s_[0]} + " if len(self.ranks[t]) == 3 else ""
                tiles.append(f"        {name} = tl.load({ops[t][0]} + {bb}{rows}[:, None] * {s_[-2]} + "
                             f"{cols}[None, :] * {s_[-1]}, mask={tile_mask}, other=0.0){'' if dot16 else ops[t][3]}")
        args = ", ".join(["out"] + [x for t in self.inputs for x in [ops[t][0], *ops[t][1]]]
                         + [f"p_{p}" for p in self.params]
                         + ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr"])
        ob = f"pid_b * {M * N} + " if batch > 1 or len(out_shape) == 3 else ""
        lines = [
            "@triton.jit", f"def {self.name}({args}):",
            "    pid_m = tl.program_id(0)", "    pid_n = tl.program_id(1)", "    pid_b = tl.program_id(2)",
            "    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)", "    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
            "    rk = tl.arange(0, BLOCK_K)",
            "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
            f"    for k0 in range(0, {K}, BLOCK_K):",
            "        ka = k0 + rk",
        ] + tiles + [
            "        acc += tl.dot(a, b)" if dot16 else f"        acc += tl.dot(a, b, input_precision=\"{self.precision}\")",
            f"    mask = (rm[:, None] < {M}) & (rn[None, :] < {N})",
        ] + g.lines + [
            # broadcast with zeros, not `acc * 0.0`: a NaN in the accumulator must not reach an
            # element whose epilogue does not read it (a masked select)
            f"    tl.store(out + {ob}rm[:, None] * {N} + rn[None, :], "
            f"{val} + {negative_zero('(BLOCK_M, BLOCK_N)')}, mask=mask)"]
        self.source = "\n".join(lines)
        self.gemm_size = (M, N, batch)
        self.flops = 2 * M * N * int(K) * batch
        self.grid = DEFAULT.grid(M, N, batch)
        self.meta = DEFAULT.meta


def _kernels(plan, precision: str = "ieee", dot16=DOT16) -> list:
    return [Kernel(k, plan, precision, dot16) for k in plan.kernels if k.kind != "loop"]


def _narrow_params(plan) -> dict:
    """Parameter name -> "f16" or "bf16", for the tensor parameters declared that narrow."""
    return {p.name: p.dtype.name for p in plan.program.params
            if p.shape is not None and p.dtype is not int and p.dtype.name in ("f16", "bf16")}


class _Ranks(dict):
    def __init__(self, plan):
        super().__init__()
        self.plan = plan

    def __missing__(self, t):
        s = self.plan.costing.shape(t)
        self[t] = s
        return s


def source(plan, precision: str = "tf32", dot16=DOT16, kernels: list | None = None) -> str:
    """Kernel source. `precision`: tl.dot's input precision on f32 operands; "tf32" uses
    tensor cores (what the cost model assumes), "ieee" is exact f32 (what the interpreter
    and tests use). `dot16`: the 16-bit dtypes whose operand pairs go to a 16-bit dot."""
    head = ["import triton", "import triton.language as tl", ""]
    return "\n".join(head + [k.source + "\n" for k in kernels or _kernels(plan, precision, dot16)])


def _ensure_triton():
    """Import triton, through its interpreter when there is no CUDA device (also where the
    caller imported triton first: Triton reads TRITON_INTERPRET when a kernel is defined)."""
    import importlib.util

    try:
        import torch
    except ImportError as e:
        raise RuntimeError("the triton backend needs torch (pip install torch==2.13.0)") from e
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    if importlib.util.find_spec("triton") is None:
        raise RuntimeError("the triton backend needs triton (pip install triton)")
    import triton.language as tl

    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    if interpret and not _interpreter_function(tl.zeros):
        # triton was imported before TRITON_INTERPRET was set: its own library functions are
        # compiled ones, which the interpreter cannot call
        raise RuntimeError("the triton backend runs Triton's interpreter here (no CUDA device), and triton "
                           "was imported before that was chosen; set TRITON_INTERPRET=1 in the environment, "
                           "or run a plan with backend='triton' before importing triton yourself")
    return interpret


def _interpreter_function(fn) -> bool:
    return type(fn).__name__ == "InterpretedFunction"


def write_source(path: str, src: str) -> None:
    """Write kernel source `src` to `path` (the file triton.jit reads a kernel's source
    from) so that no reader ever sees it in part: written to a file of this thread's own,
    then renamed over `path` (atomic). Threads building one plan's kernels at once wrote
    the same path with `open(path, "w")`, which empties it first: a thread reading it then
    found no source ("@jit functions should be defined in a Python file", by a probe)."""
    import threading

    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        f.write(src)
    os.replace(tmp, path)


def _cache_dir() -> str:
    import tempfile

    d = os.path.join(tempfile.gettempdir(), "eqsat_triton")
    os.makedirs(d, exist_ok=True)
    return d


def static_strides(plan, t: Node) -> tuple | None:
    """Element strides of a tensor as the backend passes it, when known from the term:
    inputs and kernel outputs are contiguous, transposes permute, reshapes of contiguous
    tensors are contiguous. None where unknown (a slice, a loop output)."""
    op = t.op
    if op in ("Ten.input", "Ten.compute", "Ten.matmul", "Ten.fused", "Ten.reshape"):
        if op == "Ten.reshape" and static_strides(plan, t.args[0]) != _contiguous(plan.costing.shape(t.args[0])):
            return None
        return _contiguous(plan.costing.shape(t))
    if op == "Ten.transpose":
        inner = static_strides(plan, t.args[0])
        return None if inner is None else tuple(inner[int(p)] for p in t.args[1].split())
    return None


def _contiguous(shape) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def ptx(plan, kernel: int = 0, arch: int = 90, precision: str = "tf32") -> str:
    """PTX of one generated kernel, compiled ahead of time for sm_<arch> (no GPU needed) with
    the default tile (`tuning.DEFAULT`: nothing is tuned without a GPU), specialized the way
    Triton's launcher specializes a launch with this plan's tensors:
    a stride of 1 becomes the constant 1, another stride stays an argument, with the hint
    "divisible by 16" only where it is (an element stride; so a row of a contiguous tensor
    starts 16-byte aligned when the row length is a multiple of 4 floats), and pointers
    are 16-byte aligned (fresh torch allocations are). So the PTX shows the vector widths
    a GPU launch would get, not ones every stride baked in would allow."""
    import importlib.util

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernels = _kernels(plan, precision)
    gk = kernels[kernel]
    src = source(plan, precision)
    path = os.path.join(_cache_dir(), f"eqsat_ptx_{abs(hash(src)) & 0xffffffff:x}.py")
    write_source(path, src)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "0"  # compile, do not interpret, these definitions
    try:
        spec.loader.exec_module(mod)
    finally:
        if saved is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = saved
    fn = getattr(mod, gk.name)
    consts = dict(gk.meta)
    values = {}  # stride argument -> its value at this plan's sizes
    for i, t in enumerate(gk.inputs):
        strides = launch_strides(plan, t)
        for d in range(len(gk.ranks[t])):
            if strides is not None:
                values[f"in{i}_s{d}"] = strides[d]
    sig, attrs = {}, {}
    for idx, n in enumerate(fn.arg_names):
        if n in consts:
            sig[n] = "constexpr"
        elif values.get(n) == 1:
            sig[n], consts[n] = "constexpr", 1
        elif n == "out" or (n.startswith("in") and "_s" not in n):
            stored = None if n == "out" else gk.stored(gk.inputs[int(n[2:])])
            sig[n] = {"f16": "*fp16", "bf16": "*bf16", "f64": "*fp64"}.get(stored, "*fp32")
            attrs[(idx,)] = [["tt.divisibility", 16]]
        elif n.startswith("p_"):
            sig[n] = "fp32"
        else:
            sig[n] = "i32"
            if n in values and values[n] % 16 == 0:
                attrs[(idx,)] = [["tt.divisibility", 16]]
    if os.environ.get("TRITON_INTERPRET") == "1" or _interpreted():
        return _ptx_elsewhere(path, gk.name, sig, consts, attrs, arch)
    compiled = triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", arch, 32))
    return compiled.asm["ptx"]


def _interpreted() -> bool:
    """Whether a kernel ran through Triton's interpreter in this process: it patches
    triton.language for the whole process, after which a compile fails."""
    from eqsat.backends import triton_compiled

    return triton_compiled.INTERPRETED[0]


_PTX_SCRIPT = """
import importlib.util, json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
path, name, arch = sys.argv[1], sys.argv[2], int(sys.argv[3])
job = json.loads(sys.stdin.read())
spec = importlib.util.spec_from_file_location("eqsat_ptx_kernel", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
attrs = {tuple(k): v for k, v in job["attrs"]}
src = ASTSource(getattr(mod, name), job["sig"], job["consts"], attrs)
sys.stdout.write(triton.compile(src, target=GPUTarget("cuda", arch, 32)).asm["ptx"])
"""


def _ptx_elsewhere(path: str, name: str, sig: dict, consts: dict, attrs: dict, arch: int) -> str:
    """The PTX compiled in a child process without Triton's interpreter: with the
    interpreter on (TRITON_INTERPRET=1, as on a machine without a GPU) or already used here,
    Triton cannot compile in this process (`'value' object has no attribute ...`)."""
    import json
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    job = json.dumps({"sig": sig, "consts": consts, "attrs": [[list(k), v] for k, v in attrs.items()]})
    r = subprocess.run([sys.executable, "-c", _PTX_SCRIPT, path, name, str(arch)], input=job, env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise RuntimeError(f"compiling {name} for sm_{arch} failed: {last}")
    return r.stdout


def launch_strides(plan, t: Node) -> tuple | None:
    """Element strides of a kernel's input at launch: the term's static strides, or, for
    an input it does not know (a slice, a loop nest's output), a contiguous tensor's."""
    st = static_strides(plan, t)
    if st is None:
        shape = plan.costing.shape(t)
        st = _contiguous(shape) if shape is not None else None
    return st
