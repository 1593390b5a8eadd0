"""Random programs for the loop forms the exact-dataflow lowering handles (eqsat/dataflow.py).

Like `gen_programs.py`, a generated program is source text in eqsat's language (the front
end reads a program's source with `inspect`, so it is written to a real file and imported),
the name of its function, and the sizes of its dimensions (1..5). Every random decision
goes through a chooser from `gen_programs` (hypothesis's `draw` via `programs()`, or a
seeded `random.Random` via `generate_seeded`), and every choice shrinks to its first,
plainest option.

Families (see `FAMILIES`):
  scalar        scalar recurrences and resets anywhere in a loop body, in one loop or a
                2-deep nest: a scalar read before and after it is assigned in the same
                iteration (`y[i] = s + x[i]; s = x[i]`), running sums stored each iteration
                (`t += x[i]; y[i] = t`), `acc = c` at the start or end of a body,
                `acc = acc * 0.5` after a store, one scalar set from another, max/min updates,
                conditionals on data (`if`/`elif`/`else` setting, accumulating and storing,
                conditions reading what their branch writes, `a if c else b`, a guarded
                `y[i - 1]` in bounds only under `if i > 0`); scalars also returned after the loop
  multi_update  several updates of one scalar in one reduction loop (`s += x[i, k];
                s = max(s, 0.0)`), `m = max(m, x[i, k])` / `m = max(x[i, k], m)` / min,
                the scalar reset per row, before the nest or after its store
  multi_write   several statements per nest writing different buffers; one buffer written
                through different index maps (`y[i, j] = ...; y[j, i] = ...` on square
                shapes, a row in one inner loop and a column in another, `y[i, 0]`),
                last-write-wins stores `w[i] = ...` inside the inner loop, reads of the
                buffers being written
  alias         views and aliases: `v = c`, `v = c.T`, `r = c[i]` (inside a loop) and
                `r = c[0]`, reads and writes through them, `y = c; y += y`, tensor
                parameters updated in place and returned (`x[i] = x[i] * 2.0`)
  tensor_local  tensor locals and buffers allocated inside loops (`row = empty((N,))`
                filled then read, a row buffer outside the loop read before it is refilled,
                `t = relu(x[i]) + 1.0`), library calls inside loops (`c[p] = a[p] @ b`,
                `transpose(b, (1, 0))`, `.T`, elementwise functions)
  matmul        nests whose structure is known by construction, with the kernels the plan
                must have (`GenProgram.kernels`): a plain `acc` matmul with an optional
                relu / `+ bias[j]` / `* 2.0` epilogue (one "matmul" kernel), the backward
                pair `da[i, k] += dc[i, j] * b[k, j]; db[k, j] += a[i, k] * dc[i, j]` in one
                nest over zeros buffers (two "matmul" kernels), a per-iteration cache row
                read by a dot product (one "matmul" kernel)

Inputs are float32 standard normals and scalars in [0.5, 1.5] (`conftest.random_args`);
values are only summed, maxed, or scaled by constants, alpha or other small values, and
nothing divides, so every value stays small and finite.
The generator only writes valid programs: a `ProgramError` from the front end or from
`optimize` is a bug here.

    python tests/gen_dataflow.py [N [family]]     # print N sample programs
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from gen_programs import DrawChooser, GenProgram, RandomChooser, load, write  # noqa: F401  (re-exported)

HEADER = ("from eqsat import program, f32, empty, zeros, transpose, relu, sigmoid, tanh, exp, maximum, "
          "minimum\n")

HI = 5  # largest size of a dimension


@dataclass
class DataflowProgram(GenProgram):
    kernels: list | None = None  # the exact kernel kinds the plan must have (matmul family), else None

    def __str__(self) -> str:
        extra = f" kernels={self.kernels}" if self.kernels is not None else ""
        return f"# family={self.family} tags={self.tags} shapes={self.shapes}{extra}\n{self.source}"


class _Builder:
    """Parameters, dimensions, body lines and returned names of one program."""

    def __init__(self, ch):
        self.ch = ch
        self.params: dict = {}  # name -> annotation text
        self.dims: dict = {}  # name -> size
        self.lines: list = []
        self.tags: list = []
        self.returns: list = []

    def dim(self, name: str) -> str:
        if name not in self.dims:
            self.dims[name] = self.ch.int(1, HI)
        return name

    def tensor(self, name: str, *shape) -> str:
        ann = "f32[" + ", ".join(repr(d) for d in shape) + "]"
        old = self.params.setdefault(name, ann)
        assert old == ann, f"generator bug: parameter {name} is {old} and {ann}"
        return name

    def scalar(self, name: str) -> str:
        old = self.params.setdefault(name, "f32")
        assert old == "f32", f"generator bug: parameter {name} is {old} and f32"
        return name

    def emit(self, depth: int, text: str):
        self.lines.append("    " * (depth + 1) + text)

    def tag(self, t: str):
        self.tags.append(t)

    def ret(self, *names: str):
        for n in names:
            if n not in self.returns:
                self.returns.append(n)

    def finish(self, family: str, kernels: list | None = None) -> DataflowProgram:
        assert self.returns, "generator bug: nothing returned"
        # every dimension must be bound by a parameter's shape
        for d in self.dims:
            assert any(repr(d) in a for a in self.params.values()), f"generator bug: dim {d} is in no parameter"
        body = "\n".join(self.lines + ["    return " + ", ".join(self.returns)])
        digest = hashlib.sha1((family + body + repr(self.params)).encode()).hexdigest()[:12]
        name = f"df_{family}_{digest}"
        sig = ", ".join(f"{n}: {a}" for n, a in self.params.items())
        source = f"{HEADER}\n\n@program\ndef {name}({sig}):\n{body}\n"
        return DataflowProgram(source, name, dict(self.dims), family, list(self.tags), kernels)


def _pick(ch, options):
    """Choose one of `options` (callables) and call only that one, so that only the
    parameters the chosen text reads are added to the program."""
    return options[ch.choice(range(len(options)))]()


# ---------------------------------------------------------------------------- 1. scalar recurrences
def gen_scalar(b: _Builder) -> DataflowProgram:
    """One loop over x[N], or a nest i < M, j < N over x[M, N], each body a random sequence of
    statements on the scalars s, t, acc that read and write them in any order, and stores."""
    ch = b.ch
    deep = ch.coin(0.45)
    N = b.dim("N")
    scal = ["s", "t", "acc"][: ch.int(1, 3)]
    def init(v):
        if ch.coin(0.25):
            return b.scalar("alpha")
        return ch.choice(["0.0", "1.0", "-1.0"])

    if deep:
        M = b.dim("M")
        X = b.tensor("x", M, N)
        inner_x, outer_x = f"{X}[i, j]", f"{X}[i, 0]"
        b.emit(0, f"y = {ch.choice(['zeros', 'empty'])}(({M}, {N}))")
        b.emit(0, f"z = zeros(({M},))")
        inner_y = [("y", "[i, j]"), ("y", f"[i, {N} - 1 - j]")]
        outer_y = [("z", "[i]")]
    else:
        X = b.tensor("x", N)
        inner_x = f"{X}[i]"
        b.emit(0, f"y = {ch.choice(['zeros', 'empty'])}(({N},))")
        b.emit(0, f"z = zeros(({N},))")
        inner_y = [("y", "[i]"), ("z", "[i]"), ("y", f"[{N} - 1 - i]")]
    for v in scal:
        b.emit(0, f"{v} = {init(v)}")

    def stmts(depth: int, xe: str, targets: list, lo: int, hi: int) -> int:
        """Emit lo..hi random statements; returns how many stores were emitted."""
        stores = 0
        for _ in range(ch.int(lo, hi)):
            v = ch.choice(scal)
            kind = ch.choice(["store_read", "set", "accum", "reset", "decay", "store", "maxup", "mix", "cross",
                              "store_acc", "if_set", "if_accum", "if_else_store", "ifexp", "if_guarded"])
            buf, ix = ch.choice(targets)
            b.tag(kind)
            if kind == "store_read":  # read the scalar (maybe before its assignment below)
                b.emit(depth, f"{buf}{ix} = " + ch.choice([f"{v} + {xe}", f"{xe} - {v}", f"2.0 * {v}", f"{v}"]))
                stores += 1
            elif kind == "set":
                b.emit(depth, f"{v} = " + ch.choice([xe, f"{xe} * 0.5", f"{xe} + 1.0"]))
            elif kind == "accum":
                b.emit(depth, f"{v} " + ch.choice([f"+= {xe}", f"-= {xe}", f"= {v} + {xe}", f"= {xe} + {v}"]))
            elif kind == "reset":
                b.emit(depth, f"{v} = {init(v)}")
            elif kind == "decay":
                b.emit(depth, ch.choice([f"{v} = {v} * 0.5", f"{v} = 0.5 * {v}", f"{v} *= 0.5"]))
            elif kind == "store":
                b.emit(depth, f"{buf}{ix} = {v}")
                stores += 1
            elif kind == "store_acc":  # the store reads the buffer element too
                b.emit(depth, f"{buf}{ix} += {v}")
                stores += 1
            elif kind == "maxup":
                b.emit(depth, f"{v} = " + ch.choice([f"max({v}, {xe})", f"max({xe}, {v})", f"min({v}, {xe})",
                                                     f"max({v}, 0.0)"]))
            elif kind == "mix":
                b.emit(depth, f"{v} = {v} * 0.5 + {xe}")
            elif kind == "cross":
                w = ch.choice(scal)
                b.emit(depth, f"{v} = {w} + {xe}" if w != v else f"{v} = {xe} - 1.0")
            elif kind == "if_set":  # a condition on data, reading what its branch writes
                b.emit(depth, f"if {ch.choice([xe, v])} {ch.choice(['>', '<=', '!='])} {ch.choice(['0.0', v, '0.5'])}:")
                b.emit(depth + 1, f"{v} = " + ch.choice([xe, f"{xe} * 0.5", f"-{v}"]))
                if ch.coin(0.5):
                    b.emit(depth, "else:")
                    b.emit(depth + 1, f"{v} = " + ch.choice([f"{v} * 0.5", "0.0", f"{xe} + 1.0"]))
            elif kind == "if_accum":  # a conditional sum
                b.emit(depth, f"if {xe} {ch.choice(['>', '<'])} {ch.choice(['0.0', v])}:")
                b.emit(depth + 1, f"{v} " + ch.choice([f"+= {xe}", f"-= {xe}", "*= 0.5"]))
            elif kind == "if_else_store":  # both branches store, one also sets a scalar
                b.emit(depth, f"if {v} > {xe} and not {xe} < -1.0:")
                b.emit(depth + 1, f"{buf}{ix} = {v}")
                if ch.coin(0.5):
                    b.emit(depth + 1, f"{v} = {xe}")
                b.emit(depth, "elif " + f"{xe} > 0.5:")
                b.emit(depth + 1, f"{buf}{ix} = {xe} * 2.0")
                b.emit(depth, "else:")
                b.emit(depth + 1, f"{buf}{ix} = 0.0 - {v}")
                stores += 1
            elif kind == "ifexp":
                b.emit(depth, f"{v} = " + ch.choice([f"{xe} if {xe} > {v} else {v}", f"{v} if {v} < 0.0 else 0.5 * {v}",
                                                     f"({xe} if {xe} >= 0.0 else -{xe}) + {v}"]))
            elif kind == "if_guarded":  # in bounds only where the condition holds (stays a loop)
                loop = "j" if "j" in xe else "i"
                shifted = {"[i]": "[i - 1]", "[i, j]": "[i, j - 1]"}.get(ix) if ix.endswith(f"{loop}]") else None
                if shifted is None:
                    b.emit(depth, f"{buf}{ix} = {v} + {xe}")
                else:
                    b.emit(depth, f"if {loop} > 0:")
                    b.emit(depth + 1, f"{buf}{shifted} = {v} + {xe}")
                stores += 1
        return stores

    b.emit(0, f"for i in range({M if deep else N}):")
    stores = 0
    if deep:
        stores += stmts(1, outer_x, outer_y, 0, 2)
        b.emit(1, f"for j in range({N}):")
        n_in = stmts(2, inner_x, inner_y, 1, 4)
        if n_in == 0:
            b.emit(2, f"y[i, j] = {ch.choice(scal)}")
        stores += stmts(1, outer_x, outer_y, 0, 2)
    else:
        stores += stmts(1, inner_x, inner_y, 1, 5)
        if stores == 0:
            b.emit(1, f"y[i] = {ch.choice(scal)}")
    b.ret(*[n for n in ("y", "z") if any(ln.lstrip().startswith(n + "[") for ln in b.lines)])
    if ch.coin(0.5):
        b.ret(*[v for v in scal if ch.coin(0.6)])
    return b.finish("scalar")


# ---------------------------------------------------------------------------- 2. several updates of one scalar
_UPDATES = ["s += {x}", "s = max(s, 0.0)", "s = max(s, {x})", "s = max({x}, s)", "s = min(s, {x})",
            "s -= 0.5 * {x}", "s = s * 0.5", "s *= 0.5", "s = s * 0.5 + {x}", "s = max(0.0, s)", "s = min(s, 1.0)",
            "s = s + {x}", "s = {x} + s"]
_MUPDATES = ["m = max(m, {x})", "m = max({x}, m)", "m = min(m, {x})", "m = min({x}, m)"]


def gen_multi_update(b: _Builder) -> DataflowProgram:
    ch = b.ch
    M, K = b.dim("M"), b.dim("K")
    X = b.tensor("x", M, K)
    xe = f"{X}[i, k]"
    with_m = ch.coin(0.5)
    where = ch.choice(["row_start", "before_nest", "after_store"])  # where s (and m) is reset
    b.tag("reset_" + where)
    s_init = ch.choice(["0.0", f"{X}[i, 0]", "-1.0"]) if where == "row_start" else ch.choice(["0.0", "-1.0"])
    m_init = ch.choice([f"{X}[i, 0]", "-1000.0", "1000.0"]) if where == "row_start" else \
        ch.choice(["-1000.0", "1000.0", "0.0"])
    b.emit(0, f"y = {ch.choice(['empty', 'zeros'])}(({M},))")
    if with_m:
        b.emit(0, f"z = empty(({M},))")
    if where != "row_start":
        b.emit(0, f"s = {s_init}")
        if with_m:
            b.emit(0, f"m = {m_init}")
    b.emit(0, f"for i in range({M}):")
    if where == "row_start":
        b.emit(1, f"s = {s_init}")
        if with_m:
            b.emit(1, f"m = {m_init}")
    b.emit(1, f"for k in range({K}):")
    ups = [ch.choice(_UPDATES).format(x=xe) for _ in range(ch.int(1, 3))]
    if with_m:
        ups += [ch.choice(_MUPDATES).format(x=xe) for _ in range(ch.int(1, 2))]
        if ch.coin(0.5):
            ups = ch.perm(ups)
    for u in ups:
        b.tag(u.split(" ")[1] + ("max" if "max" in u else "min" if "min" in u else ""))
        b.emit(2, u)
    b.emit(1, "y[i] = " + ch.choice(["s", "s * 2.0", "relu(s) + 1.0"] + (["s + m", "m - s"] if with_m else [])))
    if with_m:
        b.emit(1, "z[i] = " + ch.choice(["m", "m * s"]))
    if where == "after_store":
        b.emit(1, f"s = {ch.choice(['0.0', '1.0', 's * 0.5'])}")
        if with_m and ch.coin(0.5):
            b.emit(1, "m = -1000.0")
    b.ret("y")
    if with_m:
        b.ret("z")
    if ch.coin(0.4):
        b.ret("s")
    return b.finish("multi_update")


# ---------------------------------------------------------------------------- 3. several writes per nest
def gen_multi_write(b: _Builder) -> DataflowProgram:
    ch = b.ch
    square = ch.coin(0.6)
    if square:
        R = C = b.dim("N")
        b.tag("square")
    else:
        R, C = b.dim("M"), b.dim("N")
    X = b.tensor("x", R, C)
    b.emit(0, f"y = {ch.choice(['zeros', 'empty'])}(({R}, {C}))")
    b.emit(0, f"z = {ch.choice(['zeros', 'empty'])}(({R}, {C}))")
    b.emit(0, f"w = zeros(({R},))")
    used = {"y"}

    def value() -> str:
        opts = [lambda: f"{X}[i, j]", lambda: f"{X}[i, j] * 2.0", lambda: f"y[i, j] + {X}[i, j]",
                lambda: f"z[i, j] - 1.0", lambda: f"{b.tensor('a', R)}[i] * {b.tensor('bb', C)}[j]",
                lambda: f"y[i, 0] + {X}[i, j]", lambda: f"w[i] + {X}[i, j]"]
        if square:
            opts += [lambda: f"{X}[j, i]", lambda: f"y[j, i] * 0.5", lambda: f"z[j, i] + {X}[i, j]",
                     lambda: f"y[i, j] - y[j, i]"]
        return _pick(ch, opts)

    def targets():
        t = ["y[i, j] =", "z[i, j] =", "y[i, j] +=", "w[i] =", "w[i] +=", "y[i, 0] =", "z[i, j] -="]
        if square:
            t += ["y[j, i] =", "z[j, i] =", "y[j, i] +=", "w[j] ="]
        return t

    def stmts(depth: int, lo: int, hi: int):
        for _ in range(ch.int(lo, hi)):
            t = ch.choice(targets())
            used.add(t[0])
            b.tag(t.replace(" ", ""))
            b.emit(depth, f"{t} {value()}")

    shape = ch.choice(["one_inner", "two_inner", "with_outer"])
    b.tag(shape)
    b.emit(0, f"for i in range({R}):")
    if shape == "with_outer" and ch.coin(0.5):
        b.emit(1, "w[i] = " + ch.choice([f"{X}[i, 0]", "y[i, 0] + 1.0", "0.5"]))
        used.add("w")
    b.emit(1, f"for j in range({C}):")
    if shape == "two_inner" and square and ch.coin(0.6):  # a row in one inner loop, a column in the other
        buf = ch.choice(["y", "z"])
        used.add(buf)
        b.tag("row_then_column")
        b.emit(2, f"{buf}[i, j] = {value()}")
        stmts(2, 0, 1)
        b.emit(1, f"for j in range({C}):")
        b.emit(2, f"{buf}[j, i] {ch.choice(['=', '+='])} {value()}")
        stmts(2, 0, 1)
    else:
        stmts(2, 2 if shape == "one_inner" else 1, 4)
        if shape == "two_inner":
            b.emit(1, f"for j in range({C}):")
            stmts(2, 1, 3)
    if shape == "with_outer":
        b.emit(1, "w[i] " + ch.choice(["+= y[i, 0]", "= z[i, 0] * 2.0", f"-= {X}[i, 0]"]))
        used.add("w")
    b.ret(*[n for n in ("y", "z", "w") if n in used])
    return b.finish("multi_write")


# ---------------------------------------------------------------------------- 4. aliases and views
def gen_alias(b: _Builder) -> DataflowProgram:
    ch = b.ch
    M, N = b.dim("M"), b.dim("N")
    X = b.tensor("x", M, N)
    base = ch.choice(["zeros", "empty", "param"])
    b.tag("c_" + base)
    if base == "param":
        b.emit(0, f"c = {b.tensor('p', M, N)}")  # `c` is a second name for the parameter p
    else:
        b.emit(0, f"c = {base}(({M}, {N}))")
    modified_x = False
    sections = [ch.choice(["view", "view_T", "row_view", "row_view_const", "self_aug", "param_inplace",
                           "param_inplace_elem"]) for _ in range(ch.int(1, 3))]
    for n, sec in enumerate(sections):
        b.tag(sec)
        v = f"v{n}"
        if sec == "view":
            b.emit(0, f"{v} = c")
            b.emit(0, f"for i in range({M}):")
            b.emit(1, f"for j in range({N}):")
            for _ in range(ch.int(1, 2)):
                tgt = ch.choice([f"{v}[i, j] =", f"{v}[i, j] +=", "c[i, j] +="])
                val = ch.choice([f"{X}[i, j]", f"c[i, j] * 0.5 + {X}[i, j]", f"{v}[i, j] - 1.0", f"{v}[i, 0]"])
                b.emit(2, f"{tgt} {val}")
            b.ret("c", v) if ch.coin(0.4) else b.ret("c")
        elif sec == "view_T":
            b.emit(0, f"{v} = c.T")
            b.emit(0, f"for j in range({N}):")
            b.emit(1, f"for i in range({M}):")
            for _ in range(ch.int(1, 2)):
                tgt = ch.choice([f"{v}[j, i] =", f"{v}[j, i] +=", "c[i, j] ="])
                val = ch.choice([f"{X}[i, j]", f"{v}[j, i] * 2.0 + {X}[i, j]", f"c[i, j] + 1.0", f"{v}[j, 0]"])
                b.emit(2, f"{tgt} {val}")
            b.ret(v) if ch.coin(0.5) else b.ret("c")
        elif sec == "row_view":
            y = f"y{n}" if ch.coin(0.4) else None  # a buffer reading the row through the view
            if y:
                b.emit(0, f"{y} = zeros(({M}, {N}))")
            b.emit(0, f"for i in range({M}):")
            b.emit(1, f"{v} = c[i]")
            if ch.coin(0.3):  # a whole-row update through the view
                b.emit(1, f"{v} += {X}[i]")
            else:
                b.emit(1, f"for j in range({N}):")
                b.emit(2, f"{v}[j] = " + ch.choice([f"{v}[j] * 0.5 + {X}[i, j]", f"{X}[i, j]", f"c[i, j] + 1.0",
                                                    f"{v}[0] + {X}[i, j]"]))
            if y:
                b.emit(1, f"for j in range({N}):")
                b.emit(2, f"{y}[i, j] = {v}[j] * 2.0")
                b.ret(y)
            b.ret("c")
        elif sec == "row_view_const":
            b.emit(0, f"{v} = c[0]")
            b.emit(0, f"for j in range({N}):")
            b.emit(1, f"{v}[j] = {v}[j] + {X}[0, j]")
            b.ret("c", v) if ch.coin(0.5) else b.ret("c")
        elif sec == "self_aug":
            b.emit(0, f"{v} = c")
            b.emit(0, f"{v} += " + ch.choice([v, X, f"{v} * 0.5", f"{X}.T.T"]))
            b.ret("c")
        elif sec == "param_inplace":
            b.emit(0, f"for i in range({M}):")
            b.emit(1, f"{X}[i] = " + ch.choice([f"{X}[i] * 2.0", f"{X}[i] + c[i]", f"relu({X}[i])"]))
            modified_x = True
        elif sec == "param_inplace_elem":
            b.emit(0, f"for i in range({M}):")
            b.emit(1, f"for j in range({N}):")
            b.emit(2, f"{X}[i, j] " + _pick(ch, [lambda: f"= {X}[i, j] * {b.scalar('alpha')}", lambda: "+= c[i, j]",
                                                  lambda: f"-= {X}[i, 0]", lambda: f"*= {b.scalar('alpha')}"]))
            modified_x = True
    if modified_x or not b.returns:
        b.ret(X)
    if base == "param" and ch.coin(0.5):
        b.ret("p")
    return b.finish("alias")


# ---------------------------------------------------------------------------- 5. tensor locals, buffers in loops
def gen_tensor_local(b: _Builder) -> DataflowProgram:
    ch = b.ch
    sec = ch.choice(["row_buf", "row_buf_outside", "tensor_local", "matmul_call", "transpose_call"])
    b.tag(sec)
    if sec in ("row_buf", "row_buf_outside", "tensor_local"):
        M, N = b.dim("M"), b.dim("N")
        X = b.tensor("x", M, N)
        b.emit(0, f"y = {ch.choice(['empty', 'zeros'])}(({M}, {N}))")
        if sec == "row_buf_outside":
            b.emit(0, f"row = {ch.choice(['empty', 'zeros'])}(({N},))")
        b.emit(0, f"for i in range({M}):")
        if sec == "tensor_local":
            b.emit(1, "t = " + ch.choice([f"relu({X}[i]) + 1.0", f"{X}[i] * 2.0", f"sigmoid({X}[i]) - {X}[i]",
                                          f"maximum({X}[i], 0.0)", f"tanh({X}[i] + y[0])"]))
            if ch.coin(0.5):
                b.emit(1, "y[i] = " + ch.choice(["t * 2.0", "t", "t + y[i]"]))
            else:
                bias = b.tensor("bias", N)
                b.emit(1, f"for j in range({N}):")
                b.emit(2, "y[i, j] = " + ch.choice([f"t[j] * {bias}[j]", f"t[{N} - 1 - j] + {bias}[j]", "t[0]"]))
        else:
            if sec == "row_buf":
                b.emit(1, f"row = {ch.choice(['empty', 'zeros'])}(({N},))")
            read_first = sec == "row_buf_outside" and ch.coin(0.5)  # reads the previous row's values
            if read_first:
                b.tag("read_before_refill")
                b.emit(1, f"for j in range({N}):")
                b.emit(2, f"y[i, j] = row[j] + {X}[i, j]")
            b.emit(1, f"for j in range({N}):")
            b.emit(2, "row[j] = " + ch.choice([f"{X}[i, j]", f"{X}[i, j] * 2.0", f"relu({X}[i, j])",
                                               f"{X}[i, j] + row[j]" if sec == "row_buf_outside" else f"{X}[i, 0]"]))
            if not read_first or ch.coin(0.5):
                b.emit(1, f"for j in range({N}):")
                b.emit(2, f"y[i, j] {ch.choice(['=', '+='])} " + ch.choice(["row[j]", f"row[j] + row[{N} - 1 - j]",
                                                                           "row[0] * row[j]", "2.0 * row[j]"]))
        b.ret("y")
        if sec == "row_buf_outside" and ch.coin(0.5):
            b.ret("row")
        return b.finish("tensor_local")
    P, M, K = b.dim("P"), b.dim("M"), b.dim("K")
    if sec == "matmul_call":
        N = b.dim("N")
        A = b.tensor("a", P, M, K)
        if ch.coin(0.5):
            B_ = b.tensor("b", K, N)
            rhs = B_
        else:
            B_ = b.tensor("bt", N, K)
            rhs = ch.choice([f"transpose({B_}, (1, 0))", f"{B_}.T"])
            b.tag("rhs_transposed")
        b.emit(0, f"c = {ch.choice(['empty', 'zeros'])}(({P}, {M}, {N}))")
        b.emit(0, f"for p in range({P}):")
        prod = f"{A}[p] @ {rhs}"
        form = ch.choice(["plain", "epilogue", "two_stmts", "accumulate"])
        b.tag(form)
        if form == "plain":
            b.emit(1, f"c[p] = {prod}")
        elif form == "epilogue":
            b.emit(1, "c[p] = " + _pick(ch, [lambda: f"relu({prod}) + 1.0", lambda: f"({prod}) * 2.0",
                                              lambda: f"({prod}) + {b.tensor('bias', N)}"]))
        elif form == "two_stmts":
            b.emit(1, f"h = {prod}")
            b.emit(1, "c[p] = " + ch.choice(["relu(h)", "h + h", "h.T.T * 0.5"]))
        else:
            b.emit(1, f"c[p] = {prod}")
            b.emit(1, ch.choice(["c[p] += c[p]", "c[p] = c[p] + 1.0", "c[p] += c[0]"]))
        b.ret("c")
        return b.finish("tensor_local")
    # transpose_call: per-slice transposes inside a loop
    A = b.tensor("a", P, M, K)
    b.emit(0, f"c = empty(({P}, {K}, {M}))")
    b.emit(0, f"for p in range({P}):")
    b.emit(1, "c[p] = " + ch.choice([f"transpose({A}[p], (1, 0))", f"{A}[p].T", f"relu(transpose({A}[p], (1, 0)))",
                                      f"transpose({A}[p] * 2.0, (1, 0)) + 1.0"]))
    if ch.coin(0.5):
        b.emit(1, f"for k in range({K}):")
        b.emit(2, f"c[p, k] = c[p, k] + {A}[p, 0, k]")
    b.ret("c")
    return b.finish("tensor_local")


# ---------------------------------------------------------------------------- 6. matmuls known by construction
def gen_matmul(b: _Builder) -> DataflowProgram:
    ch = b.ch
    kind = ch.choice(["plain", "backward", "cache"])
    b.tag(kind)
    M, N, K = b.dim("M"), b.dim("N"), b.dim("K")
    A, B_ = b.tensor("a", M, K), b.tensor("b", K, N)
    if kind == "plain":
        b.emit(0, f"y = {ch.choice(['empty', 'zeros'])}(({M}, {N}))")
        order = ch.choice([("i", "j"), ("j", "i")])
        for d, v in enumerate(order):
            b.emit(d, f"for {v} in range({M if v == 'i' else N}):")
        b.emit(2, "acc = 0.0")
        b.emit(2, f"for k in range({K}):")
        b.emit(3, "acc += " + ch.choice([f"{A}[i, k] * {B_}[k, j]", f"{B_}[k, j] * {A}[i, k]"]))
        e = "acc"
        ops = [op for op in ("relu", "bias", "scale") if ch.coin(0.4)]
        ops = ch.perm(ops) if len(ops) > 1 else ops
        for op in ops:
            b.tag("epi_" + op)
            if op == "relu":
                e = f"relu({e})"
            elif op == "bias":
                e = f"{e} + {b.tensor('bias', N)}[j]"
            else:
                e = f"({e}) * 2.0" if e != "acc" else "acc * 2.0"
        b.emit(2, f"y[i, j] = {e}")
        b.ret("y")
        return b.finish("matmul", ["matmul"])
    if kind == "backward":
        DC = b.tensor("dc", M, N)
        b.emit(0, f"da = zeros(({M}, {K}))")
        b.emit(0, f"db = zeros(({K}, {N}))")
        ext = {"i": M, "j": N, "k": K}
        for d, v in enumerate(ch.perm(["i", "j", "k"])):
            b.emit(d, f"for {v} in range({ext[v]}):")
        st = [f"da[i, k] += {DC}[i, j] * {B_}[k, j]", f"db[k, j] += {A}[i, k] * {DC}[i, j]"]
        if ch.coin(0.5):
            st.reverse()
            b.tag("db_first")
        for s in st:
            b.emit(3, s)
        b.ret(*(["da", "db"] if ch.coin(0.5) else ["db", "da"]))
        return b.finish("matmul", ["matmul", "matmul"])
    # a per-iteration cache of a's row, then a dot product with it
    b.emit(0, f"y = {ch.choice(['empty', 'zeros'])}(({M}, {N}))")
    outside = ch.coin(0.5)
    if outside:
        b.tag("row_outside")
        b.emit(0, f"row = {ch.choice(['empty', 'zeros'])}(({K},))")
    b.emit(0, f"for i in range({M}):")
    if not outside:
        b.emit(1, f"row = {ch.choice(['empty', 'zeros'])}(({K},))")
    b.emit(1, f"for k in range({K}):")
    b.emit(2, f"row[k] = {A}[i, k]")
    b.emit(1, f"for j in range({N}):")
    b.emit(2, "acc = 0.0")
    b.emit(2, f"for k in range({K}):")
    b.emit(3, "acc += " + ch.choice([f"row[k] * {B_}[k, j]", f"{B_}[k, j] * row[k]"]))
    b.emit(2, "y[i, j] = acc")
    b.ret("y")
    return b.finish("matmul", ["matmul"])


FAMILIES = {"scalar": gen_scalar, "multi_update": gen_multi_update, "multi_write": gen_multi_write,
            "alias": gen_alias, "tensor_local": gen_tensor_local, "matmul": gen_matmul}


def generate(ch, family: str | None = None) -> DataflowProgram:
    if family is None:
        family = ch.choice(list(FAMILIES))
    return FAMILIES[family](_Builder(ch))


def programs(family: str | None = None):
    """A hypothesis strategy of `DataflowProgram`s (of one family, or of any)."""
    from hypothesis import strategies as st

    @st.composite
    def _programs(draw):
        return generate(DrawChooser(draw), family)

    return _programs()


def generate_seeded(seed: int, family: str | None = None) -> DataflowProgram:
    return generate(RandomChooser(random.Random(seed)), family)


if __name__ == "__main__":
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    fam = sys.argv[2] if len(sys.argv) > 2 else None
    for s in range(n):
        print(generate_seeded(s, fam))
