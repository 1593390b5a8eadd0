"""Random loop programs in eqsat's input language, for differential testing.

A generated program is source text (the front end reads a program's source with
`inspect.getsource`, so it has to live in a real file), the name of the decorated
function in it, and the sizes of its dimensions:

    gp = generate(RandomChooser(random.Random(7)))       # or: hypothesis, via `programs()`
    prog = load(gp, directory)                            # writes the file, imports it
    args = make_args(prog, gp.shapes, np.random.default_rng(0))

    w = Worker(timeout=30)                                # or all of it in a worker process:
    res = w.call(write(gp, directory), gp.name, gp.shapes, seed)   # reference, optimize, run

Every random decision goes through a `Chooser`, so the same generator is driven by
hypothesis (`programs()`, shrinks towards the first alternative of each choice, which
is always the plainest one) or by a seeded `random.Random` (reproducible fixed cases).

Families (see `FAMILIES`):
  loop_matmul  matmul-like nests: any loop order, scalar or buffer accumulators, a known
               initial value, operands stored either way round, transposed caches,
               temporaries, epilogues; and near-misses that are NOT matmuls
               (last-write-wins, diagonal, partial range, offset index, recurrences,
               max-plus, accumulator read inside its loop, plain `acc = acc + p`)
  tensor       library-call programs: `x @ w`, `.T`, `transpose`, batched loops
               around `a[i] @ b`, 3-D `@`, chained layers, hybrids of loops and calls
  pointwise    elementwise nests, slice stores, row reductions, softmax, scalar results
  loop_batched batched matmuls as four loops (per-batch or shared operands)
  loop_chain   a loop matmul feeding another (maybe transposed), epilogues reading other
               elements of the product (c[j, i], c[i, 0]), two accumulators in one nest
Sizes are 1..6 so every example runs in well under a second. Inputs are float32 standard
normals, scalars uniform in [0.5, 1.5]; nothing takes sqrt or divides by a value that can
be negative or zero, and exp only sees a quarter of its argument, so the reference is
always finite.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import random
from dataclasses import dataclass, field

import numpy as np

HEADER = ("from eqsat import program, f32, empty, zeros, transpose, relu, gelu, silu, sigmoid, tanh, exp, "
          "sqrt, maximum, minimum\n")


# ---------------------------------------------------------------------------- choosers
class RandomChooser:
    """Decisions from a `random.Random`."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, seq):
        return self.rng.choice(list(seq))

    def coin(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def perm(self, seq) -> list:
        out = list(seq)
        self.rng.shuffle(out)
        return out


class DrawChooser:
    """Decisions from hypothesis's `draw`; every choice shrinks to its plainest option."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def int(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return self.draw(self.st.sampled_from(list(seq)))

    def coin(self, p: float = 0.5) -> bool:
        # shrinks towards 0, i.e. towards False: optional features disappear when shrinking
        return self.draw(self.st.integers(0, 999)) >= round(1000 * (1 - p))

    def perm(self, seq) -> list:
        return list(self.draw(self.st.permutations(list(seq))))


# ---------------------------------------------------------------------------- the result
@dataclass
class GenProgram:
    source: str
    name: str
    shapes: dict
    family: str
    tags: list = field(default_factory=list)

    def __str__(self) -> str:
        return f"# family={self.family} tags={self.tags} shapes={self.shapes}\n{self.source}"


class _Builder:
    """Collects parameters, dimensions and body lines of one program."""

    def __init__(self, ch, near: str | None = None):
        self.ch = ch
        self.near = near  # force this near-miss in loop_matmul (None: choose one)
        self.params: dict = {}  # name -> annotation text
        self.dims: dict = {}  # name -> size
        self.lines: list = []
        self.tags: list = []

    def dim(self, name: str, lo: int = 1, hi: int = 6) -> str:
        if name not in self.dims:
            self.dims[name] = self.ch.int(lo, hi)
        return name

    def tensor(self, name: str, *shape) -> str:
        """A tensor parameter; the same name and shape is the same parameter, a name already
        taken with another shape gets a numbered twin (bias, bias2, ...)."""
        ann = "f32[" + ", ".join(repr(d) for d in shape) + "]"
        base, n = name, 1
        while self.params.setdefault(name, ann) != ann:
            n += 1
            name = f"{base}{n}"
        return name

    def scalar(self, name: str) -> str:
        old = self.params.setdefault(name, "f32")
        assert old == "f32", (name, old)
        return name

    def emit(self, depth: int, text: str):
        self.lines.append("    " * (depth + 1) + text)

    def tag(self, t: str):
        self.tags.append(t)

    def finish(self, family: str, returns: str) -> GenProgram:
        names = list(self.params)
        if len(names) > 1 and self.ch.coin(0.3):
            names = self.ch.perm(names)
            self.tag("param_order_shuffled")
        body = "\n".join(self.lines + ["    return " + returns])
        digest = hashlib.sha1((family + body + repr(names) + repr(self.params)).encode()).hexdigest()[:12]
        name = f"gen_{family}_{digest}"
        sig = ", ".join(f"{n}: {self.params[n]}" for n in names)
        source = f"{HEADER}\n\n@program\ndef {name}({sig}):\n{body}\n"
        # only the dims the parameters mention are bound by arguments; keep exactly those
        used = {d for d in self.dims if any(repr(d) in a for a in self.params.values())}
        shapes = {d: n for d, n in self.dims.items() if d in used}
        return GenProgram(source, name, shapes, family, list(self.tags))


def _pick(ch, options):
    """Choose one of `options` (callables) and call only that one, so that only the
    parameters the chosen text reads are added to the program."""
    return options[ch.choice(range(len(options)))]()


def _range(lo: str | None, hi: str) -> str:
    return f"range({hi})" if lo is None else f"range({lo}, {hi})"


# ---------------------------------------------------------------------------- epilogues
_UNARY_SAFE = ["relu", "tanh", "sigmoid", "gelu", "silu"]


def epilogue(b: _Builder, e: str, i: str | None, j: str | None, dm: str, dn: str, *, tensor: bool,
             max_ops: int = 3) -> str:
    """Wrap expression `e` (element [i, j] of an [dm, dn] result, or the whole tensor when
    `tensor`) in 0..max_ops random elementwise operations; adds the parameters it reads."""
    ch = b.ch
    n = ch.int(0, max_ops)
    used_exp = False
    for _ in range(n):
        op = ch.choice(["bias_n", "relu", "scale", "bias_m", "res", "unary", "const", "max0", "min1",
                        "exp", "sqrtpos", "bias_t", "neg", "div_scale", "sub_res"])
        if op == "exp" and used_exp:
            op = "tanh"
        b.tag("epi_" + op)
        if op == "bias_n":
            bias = b.tensor("bias", dn)
            e = f"{e} + {bias}" if tensor else (f"{e} + {bias}[{j}]" if ch.coin() else f"{bias}[{j}] + {e}")
        elif op == "bias_m":
            if tensor:
                bm = b.tensor("bias_col", dm, 1)  # an [M, 1] column broadcasts along rows
                e = f"{e} + {bm}"
            elif ch.coin():
                bm = b.tensor("bias_m", dm)
                e = f"{e} + {bm}[{i}]"
            else:
                bm = b.tensor("bias_col", dm, 1)
                e = f"{e} + {bm}[{i}, 0]"
        elif op == "bias_t":
            bt = b.tensor("bias_t", dn, dm)
            e = f"{e} + transpose({bt}, (1, 0))" if tensor else f"{e} + {bt}[{j}, {i}]"
        elif op == "res":
            r = b.tensor("res", dm, dn)
            e = f"{e} + {r}" if tensor else f"{e} + {r}[{i}, {j}]"
        elif op == "sub_res":
            r = b.tensor("res", dm, dn)
            e = f"{r} - ({e})" if tensor else f"{r}[{i}, {j}] - ({e})"
        elif op == "scale":
            s = b.scalar("alpha")
            e = f"{s} * ({e})" if ch.coin() else f"({e}) * {s}"
        elif op == "div_scale":
            s = b.scalar("alpha")  # alpha is drawn from [0.5, 1.5]: never zero
            e = f"({e}) / {s}"
        elif op == "const":
            e = ch.choice([f"({e}) * 2.0", f"0.5 * ({e})", f"({e}) - 1.0", f"1.0 + ({e})"])
        elif op == "relu":
            e = f"relu({e})"
        elif op == "unary":
            e = f"{ch.choice(_UNARY_SAFE)}({e})"
        elif op == "tanh":
            e = f"tanh({e})"
        elif op == "exp":
            used_exp = True
            e = f"exp(0.25 * ({e}))"
        elif op == "max0":
            e = f"maximum({e}, 0.0)" if tensor else ch.choice([f"max({e}, 0.0)", f"max(0.0, {e})"])
        elif op == "min1":
            e = f"minimum({e}, 1.0)" if tensor else f"min({e}, 1.0)"
        elif op == "sqrtpos":
            e = f"sqrt(({e}) * ({e}) + 1.0)"
        elif op == "neg":
            e = f"-({e})"
    return e


# ---------------------------------------------------------------------------- loop matmuls
NEAR_MISSES = ["none", "last_write", "diag_read", "diag_write", "partial_k", "partial_ij", "offset",
               "recur_after", "recur_init", "maxplus", "acc_read", "plain_update"]


_FLIP = {"ik": "ki", "ki": "ik", "kj": "jk", "jk": "kj"}


def _row_first(lay: str) -> bool:
    return lay in ("ik", "jk")


def _stored(lay: str, rows: str, red: str) -> tuple:
    return (rows, red) if _row_first(lay) else (red, rows)


def _ref(arr: str, lay: str, row: str, red: str) -> str:
    return f"{arr}[{row}, {red}]" if _row_first(lay) else f"{arr}[{red}, {row}]"


def gen_loop_matmul(b: _Builder) -> GenProgram:
    ch = b.ch
    i, j, k = ch.choice([("i", "j", "k"), ("i", "j", "k"), ("p", "q", "r"), ("row", "col", "kk")])
    near = b.near or ch.choice(["none"] * 8 + NEAR_MISSES[1:])
    b.tag("near_" + near)
    square = near == "diag_write" or ch.coin(0.1)
    M = b.dim("M")
    N = M if square else b.dim("N")
    K = b.dim("K")
    if near == "diag_write":
        b.tag("square")

    # ---- operands: layout, gram (both operands the same tensor), caches
    # a holds the logical element (row i < M, red k < K), b the element (red k < K, col j < N);
    # a layout names the stored order: "ik"/"jk" store [row, red], "ki"/"kj" store [red, row]
    a_lay = ch.choice(["ik", "ki"])
    b_lay = ch.choice(["kj", "jk"])
    gram = square and ch.coin(0.5)
    b.tag(f"a_{a_lay}")
    b.tag(f"b_{b_lay}" if not gram else "gram")
    A = b.tensor("a", *_stored(a_lay, M, K))
    if gram:  # b[k, j] is a[j, k] (a stored [M, K]) or a[k, j] (a stored [K, M])
        B, b_lay = A, ("jk" if a_lay == "ik" else "kj")
    else:
        B = b.tensor("b", *_stored(b_lay, N, K))
    a_arr, b_arr = A, B
    for which in ("a", "b"):
        if (which == "a" and near == "diag_read") or not ch.coin(0.25):
            continue
        src, lay, rows = (a_arr, a_lay, M) if which == "a" else (b_arr, b_lay, N)
        new_lay = ch.choice([lay, _FLIP[lay]])
        name = which + "c"
        cshape = _stored(new_lay, rows, K)
        b.emit(0, f"{name} = {ch.choice(['empty', 'zeros'])}(({cshape[0]}, {cshape[1]}))")
        axes = [("x0", cshape[0]), ("x1", cshape[1])]
        outer, inner = ch.perm(axes)
        b.emit(0, f"for {outer[0]} in range({outer[1]}):")
        b.emit(1, f"for {inner[0]} in range({inner[1]}):")
        row_v, red_v = ("x0", "x1") if _row_first(new_lay) else ("x1", "x0")
        b.emit(2, f"{name}[x0, x1] = {_ref(src, lay, row_v, red_v)}")
        b.tag(f"cache_{which}_{'T' if new_lay != lay else 'copy'}")
        if which == "a":
            a_arr, a_lay = name, new_lay
        else:
            b_arr, b_lay = name, new_lay

    k_lo, k_hi = None, K
    if near == "partial_k":
        k_lo, k_hi = ch.choice([(None, f"{K} - 1"), ("1", K)])
    a_red = b_red = k
    if near == "offset":  # k + 1 stays in range because k stops at K - 2
        k_hi = f"{K} - 1"
        if ch.coin():
            a_red = f"{k} + 1"
        else:
            b_red = f"{k} + 1"
    if near == "diag_read":
        a_expr = f"{b.tensor('d', M, M)}[{i}, {i}]"
    else:
        a_expr = _ref(a_arr, a_lay, i, a_red)
    b_expr = _ref(b_arr, b_lay, j, b_red)
    prod = f"{a_expr} * {b_expr}" if ch.coin() else f"{b_expr} * {a_expr}"
    if near == "maxplus":
        prod = f"{a_expr} + {b_expr}"
    elif ch.coin(0.15):
        extra = _pick(ch, [lambda: "2.0", lambda: b.scalar("beta")])
        prod = ch.choice([f"{extra} * {prod}", f"{prod} * {extra}", f"{a_expr} * ({extra} * {b_expr})",
                          f"-({prod})", f"-{a_expr} * {b_expr}", f"{prod} / {extra}", f"({prod}) * -0.5"])
        b.tag("prod_extra")

    style = ch.choice(["scalar", "buffer", "buffer_init", "buffer_init_nest"])
    if near in ("maxplus", "acc_read") or (near == "plain_update" and ch.coin()):
        style = "scalar"
    if near in ("recur_after", "diag_write"):
        style = ch.choice(["buffer", "buffer_init"])
    if near == "recur_init":
        style = "buffer_init"
    b.tag("style_" + style)
    k_rng = _range(k_lo, k_hi)
    i_rng, j_rng = f"range({M})", f"range({N})"
    if near == "partial_ij":
        if ch.coin():
            i_rng = ch.choice([f"range(1, {M})", f"range({M} - 1)"])
        else:
            j_rng = ch.choice([f"range(1, {N})", f"range({N} - 1)"])
    if near == "recur_init":
        i_rng = f"range(1, {M})"

    ci, cj = (i, i) if near == "diag_write" else (i, j)
    rets = []
    if style == "scalar":
        t_mode = ch.choice(["direct", "direct", "temp", "temp_T"])
        b.tag("out_" + t_mode)
        out = "y" if t_mode == "direct" else "t"
        b.emit(0, f"{out} = {ch.choice(['empty', 'zeros'])}(({M}, {N}))")
        outer = [(i, i_rng), (j, j_rng)]
        if ch.coin():
            outer.reverse()
            b.tag("order_ji")
        b.emit(0, f"for {outer[0][0]} in {outer[0][1]}:")
        b.emit(1, f"for {outer[1][0]} in {outer[1][1]}:")
        if near == "maxplus":
            init = _pick(ch, [lambda: "-1000.0", lambda: "0.0", lambda: f"{b.tensor('bias', N)}[{j}]"])
        else:
            init = _pick(ch, [lambda: "0.0", lambda: "0.0", lambda: f"{b.tensor('bias', N)}[{j}]",
                              lambda: f"{b.tensor('res', M, N)}[{i}, {j}]", lambda: "1.0"])
        if init != "0.0":
            b.tag("acc_init_known")
        b.emit(2, f"acc = {init}")
        b.emit(2, f"for {k} in {k_rng}:")
        if near == "maxplus":
            f = ch.choice(["max", "min"])
            b.emit(3, ch.choice([f"acc = {f}(acc, {prod})", f"acc = {f}({prod}, acc)"]))
            b.tag("maxplus_" + f)
        elif near == "last_write":
            b.emit(3, f"acc = {prod}")
        elif near == "acc_read":
            b.emit(3, f"acc += {prod} + 0.125 * acc")
        elif near == "plain_update":
            b.emit(3, ch.choice([f"acc = acc + {prod}", f"acc = {prod} + acc", f"acc = acc - {prod}"]))
        else:
            b.emit(3, ch.choice([f"acc += {prod}", f"acc += {prod}", f"acc -= {prod}"]))
        val = epilogue(b, "acc", i, j, M, N, tensor=False)
        b.emit(2, f"{out}[{i}, {j}] = {val}")
        if t_mode == "direct":
            rets.append(out)
        else:
            shape = (M, N) if t_mode == "temp" else (N, M)
            b.emit(0, f"y = empty(({shape[0]}, {shape[1]}))")
            order = ch.perm([(i, M), (j, N)])
            b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
            b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
            dst = f"y[{i}, {j}]" if t_mode == "temp" else f"y[{j}, {i}]"
            b.emit(2, f"{dst} = t[{i}, {j}]")
            rets.append("y")
            if ch.coin(0.2):
                rets.append("t")
                b.tag("multi_out")
    else:
        alloc = "zeros" if style == "buffer" and ch.coin(0.7) else "empty"
        b.emit(0, f"c = {alloc}(({M}, {N}))")
        if style == "buffer_init_nest":
            init = _pick(ch, [lambda: f"{b.tensor('bias', N)}[{j}]", lambda: f"{b.tensor('res', M, N)}[{i}, {j}]",
                              lambda: f"2.0 * {b.tensor('bias', N)}[{j}]"])
            order = ch.perm([(i, M), (j, N)])
            b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
            b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
            b.emit(2, f"c[{i}, {j}] = {init}")
            b.tag("acc_init_known")
        if near == "last_write":
            upd = f"c[{ci}, {cj}] = {prod}"
        elif near == "plain_update":
            upd = f"c[{ci}, {cj}] = c[{ci}, {cj}] + {prod}"
        else:
            upd = ch.choice([f"c[{ci}, {cj}] += {prod}"] * 3 + [f"c[{ci}, {cj}] -= {prod}"])
        if style == "buffer_init":
            init = _pick(ch, [lambda: "0.0", lambda: f"{b.tensor('bias', N)}[{j}]",
                              lambda: f"{b.tensor('res', M, N)}[{i}, {j}]"])
            if near == "recur_init":
                init = f"c[{i} - 1, {j}]"
            elif near == "diag_write":
                init = "0.0"
            outer = [(i, i_rng), (j, j_rng)]
            if ch.coin() and near != "recur_init":
                outer.reverse()
                b.tag("order_ji")
            b.emit(0, f"for {outer[0][0]} in {outer[0][1]}:")
            b.emit(1, f"for {outer[1][0]} in {outer[1][1]}:")
            b.emit(2, f"c[{ci}, {cj}] = {init}")
            b.emit(2, f"for {k} in {k_rng}:")
            b.emit(3, upd)
        else:
            loops = [(i, i_rng), (j, j_rng), (k, k_rng)]
            loops = ch.perm(loops)
            b.tag("order_" + "".join(v[0] for v, _ in loops))
            for d, (v, rng) in enumerate(loops):
                b.emit(d, f"for {v} in {rng}:")
            b.emit(3, upd)
        if near == "recur_after":
            if ch.coin():
                b.emit(0, f"for {i} in range(1, {M}):")
                b.emit(1, f"for {j} in range({N}):")
            else:
                b.emit(0, f"for {j} in range({N}):")
                b.emit(1, f"for {i} in range(1, {M}):")
            b.emit(2, ch.choice([f"c[{i}, {j}] += c[{i} - 1, {j}]",
                                 f"c[{i}, {j}] = c[{i}, {j}] * 0.5 + c[{i} - 1, {j}]"]))
        epi_mode = ch.choice(["none", "nest", "inplace", "tensor"])
        b.tag("epi_mode_" + epi_mode)
        if epi_mode == "none":
            rets.append("c")
        elif epi_mode == "tensor":
            rets.append(epilogue(b, "c", None, None, M, N, tensor=True))
        else:
            dst = "y" if epi_mode == "nest" else "c"
            if dst == "y":
                b.emit(0, f"y = empty(({M}, {N}))")
            order = ch.perm([(i, M), (j, N)])
            b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
            b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
            b.emit(2, f"{dst}[{i}, {j}] = {epilogue(b, f'c[{i}, {j}]', i, j, M, N, tensor=False)}")
            rets.append(dst)
            if dst == "y" and ch.coin(0.2):
                rets.append("c")
                b.tag("multi_out")
    return b.finish("loop_matmul", ", ".join(rets))


# ---------------------------------------------------------------------------- tensor-level programs
def _operand(b: _Builder, name: str, rows: str, cols: str) -> str:
    """A [rows, cols] operand: stored that way, or stored transposed and read with .T/transpose."""
    ch = b.ch
    how = ch.choice(["plain", "T", "transpose"])
    b.tag(f"{name}_{how}")
    if how == "plain":
        return b.tensor(name, rows, cols)
    t = b.tensor(name, cols, rows)
    return f"{t}.T" if how == "T" else f"transpose({t}, (1, 0))"


def gen_tensor(b: _Builder) -> GenProgram:
    ch = b.ch
    kind = ch.choice(["linear", "linear", "chain", "batched_loop", "batched3d", "scaled_gemm", "hybrid_epi",
                      "loops_then_lib", "aug_assign", "transposed_out", "cross_epi"])
    b.tag("kind_" + kind)
    M, N, K = b.dim("M"), b.dim("N"), b.dim("K")
    if kind == "linear":
        X, W = _operand(b, "x", M, K), _operand(b, "w", K, N)
        mm = f"{X} @ {W}"
        return b.finish("tensor", epilogue(b, mm, None, None, M, N, tensor=True))
    if kind == "cross_epi":  # the product read at other elements than its own: c.T, row c[0]
        X, W = _operand(b, "x", M, K), _operand(b, "w", K, M)
        b.emit(0, f"c = {X} @ {W}")
        return b.finish("tensor", ch.choice(["c + c.T", "c - c[0]", "relu(c) * c[0]", "c * transpose(c, (1, 0))"]))
    if kind == "transposed_out":
        X, W = _operand(b, "x", M, K), _operand(b, "w", K, N)
        e = epilogue(b, f"{X} @ {W}", None, None, M, N, tensor=True)
        return b.finish("tensor", ch.choice([f"({e}).T", f"transpose({e}, (1, 0))"]))
    if kind == "chain":
        H = b.dim("H")
        X, W1 = _operand(b, "x", M, K), _operand(b, "w1", K, H)
        h = epilogue(b, f"{X} @ {W1}", None, None, M, H, tensor=True, max_ops=2)
        b.emit(0, f"h = {h}")
        W2 = _operand(b, "w2", H, N)
        return b.finish("tensor", epilogue(b, f"h @ {W2}", None, None, M, N, tensor=True, max_ops=2))
    if kind == "scaled_gemm":
        A, B = _operand(b, "a", M, K), _operand(b, "b", K, N)
        al, be = b.scalar("alpha"), b.scalar("beta")
        C = b.tensor("c", M, N)
        return b.finish("tensor", ch.choice([f"{al} * ({A} @ {B}) + {be} * {C}",
                                             f"{be} * {C} + ({A} @ {B}) * {al}"]))
    if kind == "aug_assign":
        X, W = _operand(b, "x", M, K), _operand(b, "w", K, N)
        b.emit(0, f"y = {X} @ {W}")
        r = b.tensor("res", M, N)
        b.emit(0, ch.choice([f"y += {r}", f"y -= {r}", f"y = y + {r}"]))
        return b.finish("tensor", epilogue(b, "y", None, None, M, N, tensor=True, max_ops=2))
    if kind == "hybrid_epi":
        X, W = _operand(b, "x", M, K), _operand(b, "w", K, N)
        b.emit(0, f"t = {X} @ {W}")
        b.emit(0, f"y = empty(({M}, {N}))")
        order = ch.perm([("i", M), ("j", N)])
        b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
        b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
        b.emit(2, f"y[i, j] = {epilogue(b, 't[i, j]', 'i', 'j', M, N, tensor=False)}")
        return b.finish("tensor", "y")
    if kind == "loops_then_lib":
        A = b.tensor("a", M, K)
        B = b.tensor("b", K, N)
        b.emit(0, f"c = zeros(({M}, {N}))")
        for d, (v, n) in enumerate(ch.perm([("i", M), ("j", N), ("k", K)])):
            b.emit(d, f"for {v} in range({n}):")
        b.emit(3, "c[i, j] += a[i, k] * b[k, j]")
        P = b.dim("P")
        W = _operand(b, "w2", N, P)
        return b.finish("tensor", epilogue(b, f"c @ {W}", None, None, M, P, tensor=True, max_ops=2))
    Bt = b.dim("Bt")
    if kind == "batched3d":
        how = ch.choice(["3x3", "3x2", "3x3_T"])
        b.tag(how)
        A = b.tensor("a", Bt, M, K)
        if how == "3x3":
            e = f"{A} @ {b.tensor('b', Bt, K, N)}"
        elif how == "3x2":
            e = f"{A} @ {_operand(b, 'w', K, N)}"
        else:
            e = f"{A} @ transpose({b.tensor('b', Bt, N, K)}, (0, 2, 1))"
        if ch.coin(0.4):
            e = f"relu({e} + {b.tensor('bias', N)})"
            b.tag("epi_bias_relu")
        return b.finish("tensor", e)
    # batched_loop: a loop around a library call
    A = b.tensor("a", Bt, M, K)
    rhs = ch.choice(["shared", "shared_T", "per_batch"])
    b.tag("rhs_" + rhs)
    if rhs == "shared":
        R = _operand(b, "w", K, N)
    elif rhs == "shared_T":
        R = f"transpose({b.tensor('w', N, K)}, (1, 0))"
    else:
        R = f"{b.tensor('w', Bt, K, N)}[bb]"
    b.emit(0, f"c = empty(({Bt}, {M}, {N}))")
    b.emit(0, f"for bb in range({Bt}):")
    lhs = "a[bb]" if ch.coin(0.7) else "transpose(a[bb], (1, 0)).T"
    b.emit(1, f"c[bb] = {lhs} @ {R}")
    post = ch.choice(["none", "tensor", "loops"])
    b.tag("post_" + post)
    if post == "none":
        return b.finish("tensor", "c")
    if post == "tensor":
        return b.finish("tensor", _pick(ch, [lambda: f"relu(c + {b.tensor('bias', N)})",
                                             lambda: f"c * {b.scalar('alpha')}", lambda: "sigmoid(c) + 1.0"]))
    b.emit(0, f"y = empty(({Bt}, {M}, {N}))")
    for d, (v, n) in enumerate(ch.perm([("bb", Bt), ("i", M), ("j", N)])):
        b.emit(d, f"for {v} in range({n}):")
    b.emit(3, f"y[bb, i, j] = {epilogue(b, 'c[bb, i, j]', 'i', 'j', M, N, tensor=False, max_ops=2)}")
    return b.finish("tensor", "y")


# ---------------------------------------------------------------------------- pointwise and reductions
def gen_pointwise(b: _Builder) -> GenProgram:
    ch = b.ch
    kind = ch.choice(["elementwise", "slice_store", "row_sum", "softmax", "dot_scalar", "transpose_copy"])
    b.tag("kind_" + kind)
    M, N = b.dim("M"), b.dim("N")
    b.tensor("x", M, N)  # read as x[i, j] below
    order = ch.perm([("i", M), ("j", N)])
    if kind == "elementwise":
        b.emit(0, f"z = {ch.choice(['empty', 'zeros'])}(({M}, {N}))")
        b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
        b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
        base = ch.choice(["x[i, j]", "x[i, j] * 2.0 - y[i, j]", "exp(0.5 * x[i, j]) * y[i, j]"])
        if "y[" in base:
            b.tensor("y", M, N)
        b.emit(2, f"z[i, j] = {epilogue(b, base, 'i', 'j', M, N, tensor=False)}")
        return b.finish("pointwise", "z")
    if kind == "slice_store":
        b.emit(0, f"z = empty(({M}, {N}))")
        b.emit(0, f"for i in range({M}):")
        bias = b.tensor("bias", N)
        b.emit(1, "z[i] = " + _pick(ch, [lambda: f"relu(x[i] * 2.0 + {bias})", lambda: f"x[i] + {bias}",
                                         lambda: f"maximum(x[i], {bias}) * {b.scalar('alpha')}"]))
        return b.finish("pointwise", "z")
    if kind == "transpose_copy":
        b.emit(0, f"z = empty(({N}, {M}))")
        b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
        b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
        b.emit(2, "z[j, i] = " + ch.choice(["x[i, j]", "tanh(x[i, j])"]))
        return b.finish("pointwise", ch.choice(["z", "z.T", "z + 1.0"]))
    if kind == "row_sum":
        b.emit(0, f"s = zeros(({M},))")
        b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
        b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
        b.emit(2, ch.choice(["s[i] += x[i, j]", "s[i] += x[i, j] * x[i, j]", "s[i] -= relu(x[i, j])"]))
        if ch.coin():
            return b.finish("pointwise", "s")
        b.emit(0, f"z = empty(({M}, {N}))")
        b.emit(0, f"for i in range({M}):")
        b.emit(1, f"for j in range({N}):")
        b.emit(2, "z[i, j] = x[i, j] - s[i]")
        return b.finish("pointwise", "z")
    if kind == "dot_scalar":
        Y = b.tensor("y", M, N)
        b.emit(0, "s = 0.0")
        b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
        b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
        b.emit(2, ch.choice([f"s += x[i, j] * {Y}[i, j]", "s = max(s, x[i, j])"]))
        return b.finish("pointwise", ch.choice(["s", "s * 2.0"]))
    # softmax over rows: max, exp, sum, divide (the sum is at least 1: no division by zero)
    b.emit(0, f"mx = empty(({M},))")
    b.emit(0, f"for i in range({M}):")
    b.emit(1, "m = -1000.0")
    b.emit(1, f"for j in range({N}):")
    b.emit(2, "m = max(m, x[i, j])")
    b.emit(1, "mx[i] = m")
    b.emit(0, f"e = empty(({M}, {N}))")
    b.emit(0, f"sm = zeros(({M},))")
    b.emit(0, f"for i in range({M}):")
    b.emit(1, f"for j in range({N}):")
    b.emit(2, "e[i, j] = exp(x[i, j] - mx[i])")
    b.emit(2, "sm[i] += e[i, j]")
    b.emit(0, f"z = empty(({M}, {N}))")
    b.emit(0, f"for {order[0][0]} in range({order[0][1]}):")
    b.emit(1, f"for {order[1][0]} in range({order[1][1]}):")
    b.emit(2, "z[i, j] = e[i, j] / sm[i]")
    return b.finish("pointwise", "z")


# ---------------------------------------------------------------------------- more loop shapes
def gen_loop_batched(b: _Builder) -> GenProgram:
    """A batched matmul written as four loops: per-batch or shared right/left operand."""
    ch = b.ch
    Bt, M, N, K = b.dim("Bt"), b.dim("M"), b.dim("N"), b.dim("K")
    how = ch.choice(["both3d", "shared_b", "shared_a"])
    b.tag("batch_" + how)
    A = f"{b.tensor('a', Bt, M, K)}[bb, i, k]" if how != "shared_a" else f"{b.tensor('a', M, K)}[i, k]"
    if how == "shared_b":
        B = _pick(ch, [lambda: f"{b.tensor('b', K, N)}[k, j]", lambda: f"{b.tensor('b', N, K)}[j, k]"])
    else:
        B = _pick(ch, [lambda: f"{b.tensor('b', Bt, K, N)}[bb, k, j]", lambda: f"{b.tensor('b', Bt, N, K)}[bb, j, k]"])
    prod = f"{A} * {B}" if ch.coin() else f"{B} * {A}"
    if ch.coin():
        b.tag("style_buffer")
        b.emit(0, f"c = zeros(({Bt}, {M}, {N}))")
        for d, (v, n) in enumerate(ch.perm([("bb", Bt), ("i", M), ("j", N), ("k", K)])):
            b.emit(d, f"for {v} in range({n}):")
        b.emit(4, f"c[bb, i, j] += {prod}")
        if ch.coin(0.5):
            return b.finish("loop_batched", "c")
        return b.finish("loop_batched", epilogue(b, "c", None, None, M, N, tensor=True, max_ops=2))
    b.tag("style_scalar")
    b.emit(0, f"c = empty(({Bt}, {M}, {N}))")
    for d, (v, n) in enumerate(ch.perm([("bb", Bt), ("i", M), ("j", N)])):
        b.emit(d, f"for {v} in range({n}):")
    b.emit(3, "acc = 0.0")
    b.emit(3, f"for k in range({K}):")
    b.emit(4, f"acc += {prod}")
    b.emit(3, f"c[bb, i, j] = {epilogue(b, 'acc', 'i', 'j', M, N, tensor=False, max_ops=2)}")
    return b.finish("loop_batched", "c")


def _matmul_nest(b: _Builder, out: str, A: str, B: str, M: str, N: str, K: str, a_t: bool, b_t: bool):
    """out = A @ B as a triple loop (A read as [k, i] when a_t, B as [j, k] when b_t)."""
    ch = b.ch
    ar = f"{A}[k, i]" if a_t else f"{A}[i, k]"
    br = f"{B}[j, k]" if b_t else f"{B}[k, j]"
    b.emit(0, f"{out} = zeros(({M}, {N}))")
    for d, (v, n) in enumerate(ch.perm([("i", M), ("j", N), ("k", K)])):
        b.emit(d, f"for {v} in range({n}):")
    b.emit(3, f"{out}[i, j] += {ar} * {br}")


def gen_loop_chain(b: _Builder) -> GenProgram:
    """Two loop matmuls, the second reading the first (maybe transposed), or a product read
    by an epilogue at other elements than its own (c[j, i], c[i, 0])."""
    ch = b.ch
    kind = ch.choice(["chain", "chain_T", "cross_epi", "two_acc", "acc_twice"])
    b.tag("kind_" + kind)
    M, K = b.dim("M"), b.dim("K")
    if kind in ("chain", "chain_T"):
        N, P = b.dim("N"), b.dim("P")
        a_t, b_t = ch.coin(), ch.coin()
        A = b.tensor("a", *((K, M) if a_t else (M, K)))
        B = b.tensor("b", *((N, K) if b_t else (K, N)))
        _matmul_nest(b, "t", A, B, M, N, K, a_t, b_t)
        if kind == "chain":  # y = t @ w
            W = b.tensor("w", N, P)
            b.emit(0, f"y = zeros(({M}, {P}))")
            for d, (v, n) in enumerate(ch.perm([("i", M), ("j", P), ("k", N)])):
                b.emit(d, f"for {v} in range({n}):")
            b.emit(3, f"y[i, j] += t[i, k] * {W}[k, j]")
        else:  # y = t.T @ w, reading t[k, i]
            W = b.tensor("w", M, P)
            b.emit(0, f"y = zeros(({N}, {P}))")
            for d, (v, n) in enumerate(ch.perm([("i", N), ("j", P), ("k", M)])):
                b.emit(d, f"for {v} in range({n}):")
            b.emit(3, f"y[i, j] += t[k, i] * {W}[k, j]")
        rets = "y, t" if ch.coin(0.25) else "y"
        return b.finish("loop_chain", rets)
    if kind == "cross_epi":  # square product, epilogue reads other elements of it
        A, B = b.tensor("a", M, K), b.tensor("b", K, M)
        _matmul_nest(b, "c", A, B, M, M, K, False, False)
        b.emit(0, f"y = empty(({M}, {M}))")
        for d, (v, n) in enumerate(ch.perm([("i", M), ("j", M)])):
            b.emit(d, f"for {v} in range({n}):")
        e = ch.choice(["c[i, j] + c[j, i]", "c[i, j] - c[i, 0]", "relu(c[i, j]) * c[0, j]", "c[j, i]",
                       "c[i, j] * c[i, j]"])
        b.emit(2, f"y[i, j] = {e}")
        return b.finish("loop_chain", "y")
    N = b.dim("N")
    A, B = b.tensor("a", M, K), b.tensor("b", K, N)
    b.emit(0, f"y = empty(({M}, {N}))")
    for d, (v, n) in enumerate(ch.perm([("i", M), ("j", N)])):
        b.emit(d, f"for {v} in range({n}):")
    b.emit(2, "acc = 0.0")
    if kind == "two_acc":  # two reductions in one loop, combined in the epilogue
        D = b.tensor("d", K, N)
        b.emit(2, "acc2 = 0.0")
        b.emit(2, f"for k in range({K}):")
        b.emit(3, f"acc += {A}[i, k] * {B}[k, j]")
        b.emit(3, "acc2 " + ch.choice([f"+= {A}[i, k] * {D}[k, j]", f"= max(acc2, {D}[k, j])"]))
        b.emit(2, "y[i, j] = " + ch.choice(["acc + acc2", "relu(acc) * acc2", "acc - 2.0 * acc2"]))
    else:  # the accumulator used twice in its epilogue
        b.emit(2, f"for k in range({K}):")
        b.emit(3, f"acc += {A}[i, k] * {B}[k, j]")
        b.emit(2, "y[i, j] = " + ch.choice(["acc * acc", "relu(acc) + acc", "tanh(acc) * sigmoid(acc)"]))
    return b.finish("loop_chain", "y")


FAMILIES = {"loop_matmul": gen_loop_matmul, "tensor": gen_tensor, "pointwise": gen_pointwise,
            "loop_batched": gen_loop_batched, "loop_chain": gen_loop_chain}


def generate(ch, family: str | None = None, near: str | None = None) -> GenProgram:
    """One random program; `family` picks a family, else it is chosen too. `near` forces a
    near-miss kind (from NEAR_MISSES) and implies the loop_matmul family."""
    if near is not None:
        family = "loop_matmul"
    if family is None:
        family = ch.choice(["loop_matmul"] * 6 + ["tensor"] * 4 + ["pointwise"] * 2 + ["loop_batched", "loop_chain"])
    return FAMILIES[family](_Builder(ch, near))


def programs(family: str | None = None, nears: list | None = None):
    """A hypothesis strategy of `GenProgram`s (`nears`: draw one of these near-misses)."""
    from hypothesis import strategies as st

    @st.composite
    def _programs(draw):
        ch = DrawChooser(draw)
        near = ch.choice(nears) if nears else None
        return generate(ch, family, near)

    return _programs()


def generate_seeded(seed: int, family: str | None = None, near: str | None = None) -> GenProgram:
    return generate(RandomChooser(random.Random(seed)), family, near)


# ---------------------------------------------------------------------------- loading and inputs
def write(gp: GenProgram, directory: str) -> str:
    """Write the program's source to `directory/<name>.py` (names are content hashes)."""
    path = os.path.join(directory, gp.name + ".py")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(gp.source)
        os.replace(tmp, path)
    return path


def load(gp: GenProgram, directory: str):
    """Write the program's source to `directory` and import it; returns the @program object."""
    path = write(gp, directory)
    spec = importlib.util.spec_from_file_location(gp.name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, gp.name)


def make_args(prog, shapes: dict, rng: np.random.Generator) -> list:
    """Random inputs: float32 standard normals for tensors, uniform [0.5, 1.5] for scalars."""
    args = []
    for p in prog.params:
        if p.shape is None:
            args.append(float(rng.uniform(0.5, 1.5)))
        else:
            shape = tuple(shapes[d] if isinstance(d, str) else d for d in p.shape)
            args.append(rng.standard_normal(shape).astype(np.float32))
    return args


# ---------------------------------------------------------------------------- running in a worker
# `optimize` runs inside egglog (Rust), which a Python signal or exception cannot interrupt.
# To turn a hang into an ordinary test failure, programs run in a worker process that the
# test kills when it does not answer in time.
def execute(path: str, name: str, shapes: dict, seed: int, backends: tuple = ("numpy",)) -> dict:
    """Load the program in `path`, draw inputs from `seed`, run `reference`, `optimize`, `run`
    on each of `backends`.

    Returns {"want": outputs, "got": {backend: outputs}, "plan": str, "kinds": [...]}
    or {"error": stage, "traceback": text} when a stage raises.
    """
    import traceback
    import warnings

    import eqsat

    out: dict = {}
    stage = "load"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        prog = getattr(mod, name)
        args = make_args(prog, shapes, np.random.default_rng(seed))
        with warnings.catch_warnings(), np.errstate(over="ignore", under="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # exp/sigmoid of large negatives: 0, fine
            stage = "reference"
            want = eqsat.reference(prog, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
            stage = "optimize"
            plan = eqsat.optimize(prog, shapes)
            out["plan"] = str(plan)
            out["got"] = {}
            for backend in backends:
                stage = f"run ({backend})"
                got = plan.run(*args, backend=backend)
                out["got"][backend] = got if isinstance(got, tuple) else (got,)
        out["want"] = want if isinstance(want, tuple) else (want,)
        out["kinds"] = [k.kind for k in plan.kernels]
        # (a matmul of one row or layer of an operand, `A[c]`: an iteration of an unrolled
        # loop read at a constant index, a view the matmul family takes)
        from eqsat.terms import walk

        out["whole_matmuls"] = sum(1 for k in plan.kernels if k.kind == "matmul" and
                                   not any(x.op == "Ten.slice" for x in walk(k.term)))
        return out
    except BaseException:  # noqa: BLE001 - everything is reported to the test
        out.update(error=stage, traceback=traceback.format_exc())
        return out


def _serve_fds(rfd: int, wfd: int):
    from multiprocessing.connection import Connection

    with Connection(rfd, writable=False) as r, Connection(wfd, readable=False) as w:
        while True:
            try:
                req = r.recv()
            except EOFError:
                return
            w.send(execute(*req))


class Hang(Exception):
    pass


class Worker:
    """A worker process running `execute`; `call` raises `Hang` after `timeout` seconds.

    A plain subprocess (not multiprocessing's spawn, which re-imports the caller's main
    script) talking over two pipes; restarted after a hang or a crash. Once one call has
    hung, later calls wait only `after_hang` seconds: hypothesis then shrinks the hanging
    example in minutes rather than hours (a normal example answers in about a second).
    """

    def __init__(self, timeout: float, after_hang: float = 5.0):
        self.timeout = timeout
        self.after_hang = min(after_hang, timeout)
        self.hung = False
        self.proc = None
        self.rconn = self.wconn = None

    def _start(self):
        import json
        import subprocess
        import sys
        from multiprocessing.connection import Connection

        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        here = os.path.dirname(os.path.abspath(__file__))
        code = ("import json, os, sys; sys.path[:0] = json.loads(os.environ['EQSAT_DIFF_SYSPATH']); "
                "import gen_programs; gen_programs._serve_fds(int(sys.argv[1]), int(sys.argv[2]))")
        env = dict(os.environ, EQSAT_DIFF_SYSPATH=json.dumps([here] + [p for p in sys.path if p]))
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(req_r), str(res_w)],
                                     pass_fds=(req_r, res_w), env=env, stdin=subprocess.DEVNULL)
        os.close(req_r)
        os.close(res_w)
        self.wconn = Connection(req_w, readable=False)
        self.rconn = Connection(res_r, writable=False)

    def call(self, path: str, name: str, shapes: dict, seed: int, backends: tuple = ("numpy",)) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.close()
            self._start()
        self.wconn.send((path, name, shapes, seed, tuple(backends)))
        limit = self.after_hang if self.hung else self.timeout
        if not self.rconn.poll(limit):
            self.close()
            self.hung = True
            raise Hang(f"no answer within {limit:g} s (optimize/run hangs)")
        try:
            return self.rconn.recv()
        except EOFError:
            code = self.proc.wait(5) if self.proc is not None else None
            self.close()
            raise Hang(f"the worker process died (exit code {code})") from None

    def close(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(5)
        for c in (self.rconn, self.wconn):
            if c is not None:
                c.close()
        self.proc = self.rconn = self.wconn = None
