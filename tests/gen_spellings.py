"""Spelling variants of one program, `C = epilogue(A @ B)`, for issue 7: the structure eqsat
finds must not depend on how the loops were written.

Every generated program computes a matmul (2-D, or batched 3-D with a batch loop) plus an
elementwise epilogue, so its expected structure is known by construction: one "matmul"
kernel, with the epilogue ops it was written with fused into it. What varies is only the
spelling, through independent choices, each recorded as a tag `choice:value` (the tags are
the "forms" that `tests/test_spellings.py` and `bench/spellings_bench.py` count):

  shape:     2d | batched            batched: a [B, ...] batch axis on a, b and c, and a batch
                                     loop `q` placed anywhere among the loops
  a:         mk | km                 a stored [M, K] (read a[i, k]) or [K, M] (read a[k, i])
  b:         kn | nk                 b stored [K, N] or [N, K]
  style:     scalar | buffer         accumulate into a scalar `acc` (k innermost), or directly
                                     into the output element `c[i, j]` (any loop order)
  acc:       iadd | add | add_rev | temp | isub | sub
                                     `x += P`, `x = x + P`, `x = P + x`, `p = P; x += p`,
                                     `x -= P`, `x = x - P` (the last two negate the product)
  init:      scalar style: zero (`acc = 0.0`) | bias (`acc = bias[j]`)
             buffer style: zeros (`c = zeros(...)`) | loop_sep (`empty` plus a separate nest
                           storing 0.0) | loop_inside (`c[i, j] = 0.0` in the i, j nest before
                           the k loop) | bias_sep | bias_inside (the same with `bias[j]`)
  alloc:     zeros | empty           scalar style: the output buffer's allocation
  order:     the loop order, outermost first (`ijk`, `kji`, `qikj`, ...)
  const:     none | alpha | lit      a constant factor in the product: a scalar parameter or a
                                     literal (2.0, 0.5, 3.0, -0.5)
  cpos:      a_left | a_right | b_left | b_right | prod_left | prod_right | lead
                                     where it stands: `(alpha * a) * b`, `(a * alpha) * b`,
                                     `a * (alpha * b)`, `a * (b * alpha)`, `alpha * (a * b)`,
                                     `(a * b) * alpha`, `alpha * a * b` (operands in either order)
  cop:       mul | div               a factor on the right (a_right, b_right, prod_right)
                                     multiplies or divides: `(a / alpha) * b`, `(a * b) / 2.0`
  lit:       2.0 | 0.5 | 3.0 | -0.5   the literal (const:lit only)
  prod:      ab | ba                 `a[..] * b[..]` or `b[..] * a[..]`
  epi:       relu | bias_j | bias_i | scale | gelu | sigmoid | tanh
                                     0..2 of them, applied in the order drawn (`epi_n:0..2`);
                                     bias_i is a row bias bias_m[i], scale a scalar parameter
  epi_at:    none | store | sep | inner
                                     in the scalar's store `c[i, j] = relu(acc + bias[j])`, as
                                     a separate in-place nest after the matmul nest
                                     (`c[i, j] = relu(c[i, j])`), or (buffer style, k innermost)
                                     in the i, j nest after the k loop
  stage:     none | onto_product | onto_epilogue
                                     derived from the above: an epilogue at sep or inner is a
                                     second stage, onto the bare product or onto a product that
                                     already carries an op of its own (a constant factor, a
                                     negation, a bias start)
  split:     none | i | j | k | ij | jk | ik
                                     those loops split as `for x0 in range(X // T): for x1 in
                                     range(T)`, indexed `x0 * T + x1` (the dims are then drawn
                                     as multiples of T)
  T:         2 | 3                   the splits' tile
  split_order: coarse | fine         `x0` outer (coarse first) or `x1` outer (fine first)
  place:     adjacent | tiles        two split loops next to each other in the loop order:
                                     each pair together, or as tiles (x0, y0, x1, y1)
  gram:      no | yes                one tensor as both operands (`a[i, k] * a[j, k]`; N is M)
  pro:       none | a | b            an activation (relu, sigmoid, tanh) on that operand:
  pro_at:    inner | loop            inside the product, or its own nest storing `ap[...] =
                                     fn(a[...])` over a's axes that the product reads

Expected structure (`SpellingProgram.required`, `structure()`): exactly one kernel, a matmul
(2-D and batched alike; "matmul found", the weaker check, is one matmul kernel and no
nest kept as a loop, other kernels allowed), whose epilogue contains,
for every requirement, at least one of its op names: the activation's own name; "add" or
"sub" for a bias (epilogue or initial value); "mul" or "div" for a scale or a constant factor;
"neg" or "sub" for a negated product (also "mul" when a literal constant can absorb the
sign); a constant factor or sign may instead sit in the prologue; a prologue's function
must be in the matmul's prologue (`Kernel.prologue`: evaluated as its operand tiles load).
Only what is certain is required: nothing says which other ops may be there.
A bias is never both the initial value and an epilogue term (both into one add is a fair
plan with an extra kernel), and an epilogue has at most one bias.

Inputs are float32 standard normals, scalars in [0.5, 1.5] (`conftest.random_args`); every
value stays small and finite. A `ProgramError` for a generated program is a bug here.

    python tests/gen_spellings.py [N]     # print N sample programs
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from gen_programs import DrawChooser, GenProgram, RandomChooser, load, write  # noqa: F401  (re-exported)

HEADER = "from eqsat import program, f32, empty, zeros, relu, gelu, sigmoid, tanh\n"

HI = 6  # largest size of a dimension
HI_BATCH = 3  # largest batch

ACC = ["iadd", "add", "add_rev", "temp", "isub", "sub"]
SCALAR_INIT = ["zero", "bias"]
BUFFER_INIT = ["zeros", "loop_sep", "loop_inside", "bias_sep", "bias_inside"]
EPI_OPS = ["relu", "bias_j", "bias_i", "scale", "gelu", "sigmoid", "tanh"]
CPOS = ["a_left", "a_right", "b_left", "b_right", "prod_left", "prod_right", "lead"]
LITERALS = ["2.0", "0.5", "3.0", "-0.5"]

# what each construct requires of the matmul kernel's epilogue (any one name of each set)
_ACT = {"relu", "gelu", "sigmoid", "tanh"}
_BIAS = frozenset({"add", "sub"})
_MUL = frozenset({"mul", "div"})
_NEG = frozenset({"neg", "sub"})


@dataclass
class SpellingProgram(GenProgram):
    batched: bool = False
    required: list = field(default_factory=list)  # [(what, frozenset of acceptable op names)]
    prologue: list = field(default_factory=list)  # functions the matmul's prologue must apply

    def tag_map(self) -> dict:
        return dict(t.split(":", 1) for t in self.tags if ":" in t)

    def size(self) -> tuple:
        """For choosing the smallest example: lines of the body, then characters, then sizes."""
        return (self.source.count("\n"), len(self.source), sum(self.shapes.values()))

    def __str__(self) -> str:
        req = ", ".join(f"{w}: {'|'.join(sorted(s))}" for w, s in self.required)
        pro = f", prologue with [{', '.join(self.prologue)}]" if self.prologue else ""
        return (f"# spelling tags={' '.join(self.tags)}\n# shapes={self.shapes} expected: one matmul"
                f"{' (batched)' if self.batched else ''}, epilogue with [{req}]{pro}\n{self.source}")


class _Builder:
    def __init__(self, ch):
        self.ch = ch
        self.params: dict = {}
        self.dims: dict = {}
        self.lines: list = []
        self.tags: list = []
        self.required: list = []
        self.prologue: list = []

    def tensor(self, name, *shape):
        ann = "f32[" + ", ".join(repr(d) for d in shape) + "]"
        old = self.params.setdefault(name, ann)
        assert old == ann, f"generator bug: parameter {name} is {old} and {ann}"
        return name

    def scalar(self, name):
        old = self.params.setdefault(name, "f32")
        assert old == "f32", f"generator bug: parameter {name} is {old} and f32"
        return name

    def emit(self, depth, text):
        self.lines.append("    " * (depth + 1) + text)

    def tag(self, key, value):
        self.tags.append(f"{key}:{value}")

    def require(self, what, names):
        self.required.append((what, frozenset(names)))


def _wrap(e: str) -> str:
    """`e` as an operand of `*`: parenthesized unless it is a name, an element or a call."""
    depth = 0
    for c in e:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and c in " +-":
            return f"({e})"
    return e


def gen_spelling(ch) -> SpellingProgram:
    b = _Builder(ch)
    batched = ch.coin(0.25)
    b.tag("shape", "batched" if batched else "2d")

    # ---- split loops (drawn first: they decide which dims must be multiples of T)
    kind = ch.choice(["none", "none", "one", "one", "two"])
    axes: tuple = ()
    if kind == "one":
        axes = (ch.choice(["i", "j", "k"]),)
    elif kind == "two":
        axes = ch.choice([("i", "j"), ("j", "k"), ("i", "k")])
    T = ch.choice([2, 3]) if axes else None
    b.tag("split", "".join(axes) or "none")
    split_order = ch.choice(["coarse", "fine"]) if axes else None
    if T:
        b.tag("T", T)
        b.tag("split_order", split_order)

    # ---- the Gram form: one tensor as both operands (N is M)
    gram = ch.coin(0.15)
    b.tag("gram", "yes" if gram else "no")

    def draw_dim(axis):
        if axis in axes or (gram and axis == "i" and "j" in axes):
            return T * ch.int(1, HI // T)
        return ch.int(1, HI)

    b.dims = {"M": draw_dim("i"), "K": draw_dim("k")}
    NN = "M" if gram else "N"  # the output's column dim (the Gram form's is M)
    if not gram:
        b.dims["N"] = draw_dim("j")
    if batched:
        b.dims["B"] = ch.int(1, HI_BATCH)

    # ---- operands
    a_lay = ch.choice(["mk", "km"])
    b_lay = "gram" if gram else ch.choice(["kn", "nk"])
    b.tag("a", a_lay)
    b.tag("b", b_lay)
    bat = ["B"] if batched else []
    A = b.tensor("a", *bat, *(("M", "K") if a_lay == "mk" else ("K", "M")))
    B = A if gram else b.tensor("b", *bat, *(("K", "N") if b_lay == "kn" else ("N", "K")))

    # where each loop of the main nest starts (`eqsat/normalize.py`): from 0, from 1 read at
    # `v - 1`, or (k) from 0 read backwards at `K - 1 - k`; a split axis from 0
    origin = {}
    for v in "ijk":
        origin[v] = "zero" if v in axes else ch.choice(["zero", "zero", "zero", "one"] + (["rev"] if v == "k" else []))
        b.tag(f"origin_{v}", origin[v])
    extent = {"i": "M", "j": NN, "k": "K"}
    # index expressions of the logical loop variables (split: x0 * T + x1)
    ix = {v: (f"{v}0 * {T} + {v}1" if v in axes else f"{v} - 1" if origin[v] == "one" else
              f"{extent[v]} - 1 - {v}" if origin[v] == "rev" else v) for v in "ijk"}
    I, J, Kx = ix["i"], ix["j"], ix["k"]
    q = "q, " if batched else ""
    a_ref = f"{A}[{q}{I}, {Kx}]" if a_lay == "mk" else f"{A}[{q}{Kx}, {I}]"
    if gram:
        b_ref = f"{A}[{q}{J}, {Kx}]" if a_lay == "mk" else f"{A}[{q}{Kx}, {J}]"
    else:
        b_ref = f"{B}[{q}{Kx}, {J}]" if b_lay == "kn" else f"{B}[{q}{J}, {Kx}]"
    C = f"c[{q}{I}, {J}]"  # the output element in the main nest
    out_shape = "(" + ", ".join(bat + ["M", NN]) + ")"

    # ---- a prologue: an activation on one operand, inside the product or as its own loop
    pro = ch.choice(["none", "none", "a"] + ([] if gram else ["b"]))
    b.tag("pro", pro)
    pro_fn = pro_at = None
    prologue_nest = None
    if pro != "none":
        pro_fn = ch.choice(["relu", "sigmoid", "tanh"])
        pro_at = ch.choice(["inner", "loop"])
        b.tag("pro_at", pro_at)
        b.prologue.append(pro_fn)
        ref = a_ref if pro == "a" else b_ref
        if pro_at == "inner":
            ref = f"{pro_fn}({ref})"
        else:  # `ap = empty(shape of a)` and a nest over a's own axes storing fn(a[...])
            src = A if pro == "a" else B
            shape = b.params[src][4:-1].replace("'", "").split(", ")
            names = [f"u{n}" for n in range(len(shape))]
            prologue_nest = (src, shape, names)
            # the main nest reads the prologue buffer where it read the operand
            ref = ref.replace(f"{src}[", f"{src}p[", 1)
        if pro == "a":
            a_ref = ref
        else:
            b_ref = ref

    # ---- accumulation style, its spelling and the initialization
    style = ch.choice(["scalar", "buffer"])
    b.tag("style", style)
    acc = ch.choice(ACC)
    b.tag("acc", acc)
    init = ch.choice(SCALAR_INIT if style == "scalar" else BUFFER_INIT)
    b.tag("init", init)
    if init.startswith("bias"):
        b.tensor("bias", NN)
        b.require("bias init", _BIAS)

    # ---- loop order: k innermost for a scalar accumulator or an init inside the nest
    outer = (["q"] if batched else []) + ["i", "j"]
    k_last = style == "scalar" or init.endswith("_inside")
    # the epilogue inside the nest after the k loop (buffer style) also needs k innermost
    order = ch.perm(outer) + ["k"] if k_last else ch.perm(outer + ["k"])
    b.tag("order", "".join(order))

    # ---- the product with its constant factor
    const = ch.choice(["none", "alpha", "lit"])
    b.tag("const", const)
    cval = None
    if const == "alpha":
        cval = b.scalar("alpha")
    elif const == "lit":
        cval = ch.choice(LITERALS)
        b.tag("lit", cval)
    if cval is not None:
        b.require("constant factor", _MUL)
    fa, fb = a_ref, b_ref
    cpos = ch.choice(CPOS) if cval is not None else None
    cop = "*"
    if cpos:
        b.tag("cpos", cpos)
        if cpos in ("a_right", "b_right", "prod_right"):  # (a factor on the right may divide)
            cop = ch.choice(["*", "/"])
            b.tag("cop", "mul" if cop == "*" else "div")
    if cpos == "a_left":
        fa = f"({cval} * {a_ref})"
    elif cpos == "a_right":
        fa = f"({a_ref} {cop} {cval})"
    elif cpos == "b_left":
        fb = f"({cval} * {b_ref})"
    elif cpos == "b_right":
        fb = f"({b_ref} {cop} {cval})"
    prod_order = ch.choice(["ab", "ba"])
    b.tag("prod", prod_order)
    x, y = (fa, fb) if prod_order == "ab" else (fb, fa)
    P = f"{x} * {y}"
    if cpos == "prod_left":
        P = f"{cval} * ({P})"
    elif cpos == "prod_right":
        P = f"({P}) {cop} {cval}"
    elif cpos == "lead":
        P = f"{cval} * {P}"
    if acc in ("isub", "sub"):
        b.require("negated product", _NEG | ({"mul"} if const == "lit" else set()))

    # ---- the epilogue: 0..2 ops (at most one bias; no bias_j when the init is a bias)
    n_epi = ch.int(0, 2)
    b.tag("epi_n", n_epi)
    ops: list = []
    for _ in range(n_epi):
        avail = [o for o in EPI_OPS if o not in ops
                 and not (o.startswith("bias") and any(p.startswith("bias") for p in ops))
                 and not (o == "bias_j" and init.startswith("bias"))]
        op = ch.choice(avail)
        ops.append(op)
        b.tag("epi", op)
    if ops:
        places = ["store", "sep"] if style == "scalar" else ["sep"] + (["inner"] if order[-1] == "k" else [])
        epi_at = ch.choice(places)
    else:
        epi_at = "none"
    b.tag("epi_at", epi_at)
    # derived: an epilogue written in a later statement than the accumulation, onto a product
    # that already carries an epilogue op of its own (a constant factor, a negation, a bias
    # start) or onto the bare product
    if epi_at in ("sep", "inner"):
        carries = const != "none" or acc in ("isub", "sub") or init.startswith("bias")
        b.tag("stage", "onto_epilogue" if carries else "onto_product")
    else:
        b.tag("stage", "none")

    def epi(e: str, i: str, j: str) -> str:
        for op in ops:
            if op in _ACT:
                e = f"{op}({e})"
            elif op == "bias_j":
                bias = b.tensor("bias", NN)
                e = f"{e} + {bias}[{j}]"
            elif op == "bias_i":
                bm = b.tensor("bias_m", "M")
                e = f"{e} + {bm}[{i}]"
            elif op == "scale":
                e = f"{_wrap(e)} * {b.scalar('scale')}"
        return e

    for op in ops:
        b.require(f"epilogue {op}", {op} if op in _ACT else (_BIAS if op.startswith("bias") else _MUL))

    # ---- the statements
    ext = {"q": "B", "i": "M", "j": NN, "k": "K"}

    def split_loops(v: str) -> list:
        """The loop headers of split variable `v`, outer first (`split_order`)."""
        coarse, fine = f"for {v}0 in range({ext[v]} // {T}):", f"for {v}1 in range({T}):"
        return [coarse, fine] if split_order == "coarse" else [fine, coarse]

    def open_loop(depth: int, v: str, split_it: bool = True) -> int:
        """Emit the loop over logical variable `v` (two loops when it is a split one; from
        its `origin` in the main nest); returns the depth of its body."""
        if split_it and v in axes:
            for h in split_loops(v):
                b.emit(depth, h)
                depth += 1
            return depth
        one = split_it and origin.get(v) == "one"
        b.emit(depth, f"for {v} in range(1, {ext[v]} + 1):" if one else f"for {v} in range({ext[v]}):")
        return depth + 1

    def open_loops(depth: int, vs: list) -> int:
        """Emit the loops over `vs` in order; two split variables next to each other may be
        written as tiles (both outer loops, then both inner ones: `place:tiles`)."""
        k = 0
        while k < len(vs):
            v = vs[k]
            w = vs[k + 1] if k + 1 < len(vs) else None
            if len(axes) == 2 and v in axes and w in axes:
                place = ch.choice(["adjacent", "tiles"])
                b.tag("place", place)
                if place == "tiles":
                    hv, hw = split_loops(v), split_loops(w)
                    for h in (hv[0], hw[0], hv[1], hw[1]):
                        b.emit(depth, h)
                        depth += 1
                    k += 2
                    continue
            depth = open_loop(depth, v)
            k += 1
        return depth

    def side_nest(stmt_of):
        """A separate nest over the output's elements (random order), storing stmt_of(i, j)."""
        d = 0
        for v in ch.perm(outer):
            d = open_loop(d, v, split_it=False)
        b.emit(d, stmt_of())

    def update(target: str, depth: int):
        neg_p = f"({P})" if P.startswith("-") else P
        if acc == "iadd":
            b.emit(depth, f"{target} += {P}")
        elif acc == "add":
            b.emit(depth, f"{target} = {target} + {P}")
        elif acc == "add_rev":
            b.emit(depth, f"{target} = {P} + {target}")
        elif acc == "temp":
            b.emit(depth, f"p = {P}")
            b.emit(depth, f"{target} += p")
        elif acc == "isub":
            b.emit(depth, f"{target} -= {neg_p}")
        elif acc == "sub":
            b.emit(depth, f"{target} = {target} - {neg_p}")

    if prologue_nest is not None:
        src, shape, names = prologue_nest
        b.emit(0, f"{src}p = empty(({', '.join(shape)},))")
        d = 0
        for n in ch.perm(list(range(len(shape)))):
            b.emit(d, f"for {names[n]} in range({shape[n]}):")
            d += 1
        at = ", ".join(names)
        b.emit(d, f"{src}p[{at}] = {pro_fn}({src}[{at}])")
    if style == "scalar":
        alloc = ch.choice(["empty", "zeros"])
        b.tag("alloc", alloc)
        # with k one loop: the first term set under `if k == first:`, and the store made after
        # the k loop, at its last iteration (`if k == last:`) or at every iteration
        first_if = "k" not in axes and init == "zero" and acc == "iadd" and ch.coin(0.5)
        store_at = ch.choice(["after", "after", "last", "every"]) if "k" not in axes else "after"
        b.tag("first_if", "yes" if first_if else "no")
        b.tag("store_at", store_at)
        b.emit(0, f"c = {alloc}({out_shape})")
        d = open_loops(0, order[:-1])
        b.emit(d, "acc = " + ("0.0" if init == "zero" else f"bias[{J}]"))
        dk = open_loop(d, "k")
        if first_if:
            b.emit(dk, f"if k == {1 if origin['k'] == 'one' else 0}:")
            b.emit(dk + 1, f"acc = {P}")
            b.emit(dk, "else:")
            update("acc", dk + 1)
        else:
            update("acc", dk)
        store = f"{C} = " + (epi("acc", I, J) if epi_at == "store" else "acc")
        if store_at == "last":
            b.emit(dk, f"if k == {'K' if origin['k'] == 'one' else 'K - 1'}:")
            b.emit(dk + 1, store)
        else:
            b.emit(dk if store_at == "every" else d, store)
    else:
        b.emit(0, f"c = {'zeros' if init == 'zeros' else 'empty'}({out_shape})")
        if init.endswith("_sep"):
            val = "0.0" if init == "loop_sep" else "bias[j]"
            side_nest(lambda: f"c[{q}i, j] = {val}")
        # (a zero set under `if k == first:` inside the k loop, the first term there or before
        # the update: an element's first iteration, `normalize._first_iteration`)
        elem_first = init == "loop_inside" and acc == "iadd" and "k" not in axes and ch.coin(0.5)
        b.tag("elem_first", "yes" if elem_first else "no")
        if elem_first:
            dk = open_loops(0, order[:-1])
            d = open_loop(dk, "k")
            b.emit(d, f"if k == {1 if origin['k'] == 'one' else 0}:")
            if ch.coin(0.5):
                b.emit(d + 1, f"{C} = {P}")
                b.emit(d, "else:")
                d += 1
            else:
                b.emit(d + 1, f"{C} = 0.0")
        elif init.endswith("_inside"):  # k innermost: the init before the k loop
            dk = open_loops(0, order[:-1])
            b.emit(dk, f"{C} = " + ("0.0" if init == "loop_inside" else f"bias[{J}]"))
            d = open_loop(dk, "k")
        else:
            kpos = order.index("k")
            dk = open_loops(0, order[:kpos])  # k and what follows are one band with the outer
            d = open_loops(dk, order[kpos:])  # part only where no statement sits between
        update(C, d)
        if epi_at == "inner":
            b.emit(dk, f"{C} = {epi(C, I, J)}")
    if epi_at == "sep":
        side_nest(lambda: f"c[{q}i, j] = {epi(f'c[{q}i, j]', 'i', 'j')}")
    b.emit(0, "return c")

    # ---- the function
    body = "\n".join(b.lines)
    digest = hashlib.sha1((body + repr(b.params) + repr(b.dims)).encode()).hexdigest()[:12]
    name = f"sp_{digest}"
    sig = ", ".join(f"{n}: {a}" for n, a in b.params.items())
    source = f"{HEADER}\n\n@program\ndef {name}({sig}):\n{body}\n"
    return SpellingProgram(source, name, dict(b.dims), "spelling", list(b.tags), batched, list(b.required),
                           list(b.prologue))


def structure(plan, gp: SpellingProgram) -> tuple[bool, bool, str]:
    """(matmul found, whole structure, why not): `found` is exactly one matmul kernel and no
    kernel kept as a loop (batched included); the whole structure is a single kernel, that
    matmul, whose epilogue has one name of each requirement (`Kernel.epilogue` lists each
    name once, so the single kernel is what proves that everything was fused)."""
    kernels = list(plan.kernels)
    mms = [k for k in kernels if k.kind == "matmul"]
    desc = ", ".join(f"{k.kind}{'+' + '+'.join(k.epilogue) if k.epilogue else ''}" for k in kernels)
    if len(mms) != 1:
        return False, False, f"{len(mms)} matmul kernels: [{desc}]"
    if any(k.kind == "loop" for k in kernels):
        return False, False, f"a nest kept as a loop: [{desc}]"
    if len(kernels) != 1:
        return True, False, f"{len(kernels)} kernels: [{desc}]"
    epi = set(mms[0].epilogue)
    # a constant factor or a sign on an operand may as well be applied in its prologue
    pro = set(mms[0].prologue)
    missing = [what for what, names in gp.required
               if not (names & (epi | pro if what in ("constant factor", "negated product") else epi))]
    missing += [f"prologue {f}" for f in gp.prologue if f not in mms[0].prologue]
    if missing:
        return True, False, f"epilogue lacks {', '.join(missing)}: [{desc}]"
    return True, True, ""


REL_L2 = 1e-4


def close(got, want) -> tuple[bool, str]:
    """Relative L2 error under 1e-4 (conftest.rel_err); an output whose norm is tiny from
    float32 cancellation also passes when allclose at rtol 1e-4, atol 1e-5."""
    import numpy as np

    from conftest import rel_err

    try:
        err = rel_err(got, want)
    except AssertionError as e:  # shapes differ
        return False, str(e)
    if not np.all(np.isfinite(np.asarray(want, dtype=np.float64))):
        return False, "the reference itself is not finite (a generator bug)"
    if err < REL_L2:
        return True, ""
    g, w = np.asarray(got, dtype=np.float32), np.asarray(want, dtype=np.float32)
    if g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-5):
        return True, ""
    return False, f"relative L2 error {err:.3g}, max abs difference {float(np.max(np.abs(g - w))):.3g}"


def evaluate(gp: SpellingProgram, directory: str, seed: int = 0, seconds: float = 5.0) -> dict:
    """Load, optimize (Limits(seconds=...)) and run `gp` against `eqsat.reference`.

    Returns {"stage": where it failed or "done", "error": message or "", "numerics_ok",
    "found", "matched", "why", "plan": str(plan), "kernels": [(kind, epilogue)], "seconds"}.
    A failure before the comparison ("front end", "reference", "optimize", "plan.run") is a
    crash; "front end" with a ProgramError is a generator bug.
    """
    import time
    import traceback
    import warnings

    import numpy as np

    import eqsat
    from conftest import random_args

    out = {"stage": "front end", "error": "", "numerics_ok": False, "found": False, "matched": False,
           "why": "", "plan": "", "kernels": [], "seconds": 0.0}
    t0 = time.perf_counter()
    try:
        prog = load(gp, directory)
        args = random_args(prog, gp.shapes, seed)
        with warnings.catch_warnings(), np.errstate(over="ignore", under="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            out["stage"] = "reference"
            want = eqsat.reference(prog, *args)
            out["stage"] = "optimize"
            plan = eqsat.optimize(prog, gp.shapes, limits=eqsat.Limits(seconds=seconds))
            out["plan"] = str(plan)
            out["kernels"] = [(k.kind, list(k.epilogue)) for k in plan.kernels]
            out["stage"] = "plan.run"
            got = plan.run(*args)
    except Exception as e:  # noqa: BLE001 - reported with the program
        out["error"] = (f"{out['stage']} raised {type(e).__name__}: {e}\n"
                        f"{traceback.format_exc(limit=-4)}")
        out["seconds"] = time.perf_counter() - t0
        return out
    out["stage"] = "done"
    out["seconds"] = time.perf_counter() - t0
    ok, why = close(got, want)
    out["numerics_ok"] = ok
    if not ok:
        out["error"] = f"output differs from the reference: {why}\ngot  {np.asarray(got)!r}\nwant {want!r}"
    out["found"], out["matched"], out["why"] = structure(plan, gp)
    return out


def programs():
    """A hypothesis strategy of `SpellingProgram`s; every choice shrinks to its plainest."""
    from hypothesis import strategies as st

    @st.composite
    def _programs(draw):
        return gen_spelling(DrawChooser(draw))

    return _programs()


def generate_seeded(seed: int) -> SpellingProgram:
    return gen_spelling(RandomChooser(random.Random(seed)))


if __name__ == "__main__":
    import sys

    for s in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
        print(generate_seeded(s))
