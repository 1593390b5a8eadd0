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
  language      the rest of DESIGN.md's language, mixed with the forms above: 1 to 3 sections,
                each a random nest, a PolyBench-shaped template or a library call.
                Nests are 1 to 3 deep with bounds `range(N)`, `range(N - 1, -1, -1)`,
                `range(0, N, 2)`, `range(N - 1, 0, -2)`, `range(1, N)`, `range(t)` (t an `int`
                parameter, 1 <= t <= N, passed in shapes), triangular and skewed in an
                enclosing variable (`range(i + 1)`, `range(i)`, `range(i, N)`, `range(i + 1, N)`,
                `range(i, -1, -1)`, `range(N - 1, i, -1)`, `range(0, i + 1, 2)`) or `range(M)`;
                statements `=`, `+=`, `-=`, `*=`, `/=`, `x[i] = x[i] op e`, max/min updates,
                `if` on loop variables (`j < i`, `i % 2 == 0`, `i < t`), on data, or both, with
                elif/else, `a if c else b`, chained `a = b = e` (`s = u = 0.0`), guarded
                `x[i - 1]` under `if i > 0`, scalars accumulated inside and stored after a loop;
                indices `i`, `N - 1 - i`, `i // 2`, `i % 2` (into [2]-shaped tensors), `t - 1`,
                `t - 1 - i`; values with `**` 2 or 3, `/ 2.0`, `/ N`, `/ (1.0 + abs(e))`,
                `1.0 / N`, `N * 0.5`, `t`, abs/max/min/relu/tanh. Targets: a buffer or a tensor
                parameter updated in place and returned (C, x), scalars returned. Templates:
                syrk (split, acc and masked forms), trmm, trisolv (forward and backward), lu,
                cholesky, symm, with their spellings varied. Library calls: `S @ B`,
                `relu(S) * alpha + S.T`, `transpose(S, (1, 0)) - S * 0.5`.
  partial       stores that write part of a tensor, which the lowering makes total under a
                mask (eqsat/ifconvert.py), mixed with `language` sections: loops over constant
                sub-ranges of the axis they store along (`range(1, N - 1)`, `range(N - 1)`,
                `range(2, N)`, downward, at any level, both sides), diagonal stores in 2-D and
                3-D (`c[i, i]`, `e[i, k, i]`, `e[i, i, 0]`), fixed-index stores inside loops
                (`c[0, j] = x[j]`, `v[0] += ...` over a loop) and as lone top-level statements
                (`c[N - 1, 0] = 2.0`, a parameter's element `x[0] = ...`), covariance-shaped
                triangular nests (`for j in range(i, N)`) whose body holds an inner reduction
                loop into a scalar and mirrored stores `c[j, i] = s`, the diagonal set after
                (correlation), data-dependent `if`/`elif`/`else` around a loop (in a row loop or
                at the top; the condition may read what the loop writes; a second `if` inside),
                scalars local to a branch (also updated under an `if` inside the branch). Near
                misses that must stay correct: a store shifted by a loop variable (`c[i + 1, j]`
                over `range(N - 1)`), stepped sub-ranges, reads shifted within the sub-range
                (`x[i - 1]` with i from 1: out of bounds on the widened range), a branch scalar
                read after the nest, before it is set in the other branch, by the condition, or
                after the `if`, or updated with `+=` first.

Inputs are float32 standard normals and scalars in [0.5, 1.5] (`conftest.random_args`).
In the first six families values are only summed, maxed, or scaled by constants, alpha or
other small values, and nothing divides. In `language` and `partial` every divisor is a positive
constant, a dim, `t`, `beta` or `1.0 + abs(e)`, and no value is fed back into itself with a
gain (see `_Lang`, `_Part`). So every value stays finite.
The generator only writes valid programs: a `ProgramError` from the front end or from
`optimize` is a bug here.

    python tests/gen_dataflow.py [N [family]]     # print N sample programs
"""
from __future__ import annotations

import hashlib
import random
import re
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
        for d in self.dims:  # (an `int` parameter is its own dim: its value is shapes[name])
            assert self.params.get(d) == "int" or any(repr(d) in a for a in self.params.values()), \
                f"generator bug: dim {d} is in no parameter"
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
        if ch.coin(0.4):  # a second inner loop: scalars carried into it, or set first in both (webs)
            b.tag("second_loop")
            b.emit(1, f"for j in range({N}):")
            if ch.coin(0.5):
                v = ch.choice(scal)
                b.emit(2, f"{v} = {inner_x} * 0.5")
            if stmts(2, inner_x, inner_y, 1, 3) == 0:
                b.emit(2, f"y[i, j] = {ch.choice(scal)} + y[i, j]")
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


# ---------------------------------------------------------------------------- 7. the rest of the language
# Loop bounds. Every form keeps its variable inside 0..N-1 (`range(M)`, innermost only, 0..M-1),
# so any variable of the first kind indexes any axis of extent N; `{o}` is an enclosing variable.
_TOP_BOUNDS = [("plain", "range({N})"), ("down", "range({N} - 1, -1, -1)"), ("step2", "range(0, {N}, 2)"),
               ("down_step2", "range({N} - 1, 0, -2)"), ("from1", "range(1, {N})"), ("int_bound", "range({t})")]
_TRI_BOUNDS = [("tri_incl", "range({o} + 1)"), ("tri", "range({o})"), ("skew_from", "range({o}, {N})"),
               ("skew_after", "range({o} + 1, {N})"), ("tri_down", "range({o}, -1, -1)"),
               ("skew_down", "range({N} - 1, {o}, -1)"), ("tri_step2", "range(0, {o} + 1, 2)")]


class _Lang:
    """One `language` program: the tensors it has, the loop variables and scalars in scope,
    and what the nest being written writes (`live`).

    Values stay finite by construction: a nest reads what it writes only through a function
    bounded by 1 (`tanh(c)`, `c / (1.0 + abs(c))`), so no element or scalar is fed back into
    itself with a gain; a product has at most one factor that an earlier nest wrote (which
    may be large, but is fixed while this nest runs); `**` only raises an input (or a bounded
    value); `x *= f` with |f| > 1 only where the target is written once per nest; every
    divisor is a positive constant, a dim, `t`, `beta` or `1.0 + abs(e)`."""

    def __init__(self, b: _Builder):
        self.b, self.ch = b, b.ch
        self.N = b.dim("N")
        self.n_alloc = 0  # allocations go to the top of the body, in the order of first use
        self.allocated: set = set()
        self.c_param = None  # C is a parameter updated in place (True) or a zeros buffer
        self.dirty: set = set()  # written so far: may be large
        self.live: set = set()  # written by the nest being generated
        self.targets: list = []  # what a statement of that nest may write
        self.scope: list = []  # enclosing loops: (variable, "N" | "M", bound tag)
        self.scalars: list = []  # scalars readable here
        self.top: list = []  # scalars defined outside loops (returned)
        self.fresh_n = 0

    # -- names
    def tg(self, tag: str, text: str) -> str:
        self.b.tag(tag)
        return text

    def fresh(self, base: str) -> str:
        self.fresh_n += 1
        return f"{base}{self.fresh_n}"

    def M(self) -> str:
        return self.b.dim("M")

    def t(self) -> str:
        """The int parameter `t` (1 <= t <= N), passed like a dim: shapes["t"] is its value."""
        if "t" not in self.b.params:
            self.b.params["t"] = "int"
            self.b.dims["t"] = self.ch.int(1, self.b.dims[self.N])
        return "t"

    def alloc(self, name: str, shape: str) -> str:
        if name not in self.allocated:
            self.allocated.add(name)
            self.b.lines.insert(self.n_alloc, f"    {name} = zeros({shape})")
            self.n_alloc += 1
        return name

    def A(self):
        return self.b.tensor("A", self.N, self.N)

    def B(self):
        return self.b.tensor("B", self.N, self.M())

    def x(self):
        return self.b.tensor("x", self.N)

    def h(self):
        return self.b.tensor("h", 2)

    def C(self):
        if self.c_param is None:
            self.c_param = self.ch.coin(0.5)
        if self.c_param:
            return self.b.tensor("C", self.N, self.N)
        return self.alloc("C", f"({self.N}, {self.N})")

    def y(self):
        return self.alloc("y", f"({self.N},)")

    def p(self):
        return self.alloc("p", "(2,)")

    def exists(self, name: str) -> bool:
        return name in self.allocated or name in self.b.params

    def written(self, name: str):
        """`name` is written (and returned); a parameter written is updated in place."""
        if name in self.b.params and name not in self.dirty:
            self.b.tag("param_inplace")
        self.dirty.add(name)
        if name in self.allocated or name in self.b.params or name in self.top:
            self.b.ret(name)

    # -- indices
    def nvars(self) -> list:
        return [v for v in self.scope if v[1] == "N"]

    def ix(self) -> str:
        """An index into an axis of extent N: mostly a loop variable as it is."""
        ch, N, nv = self.ch, self.N, self.nvars()
        if nv and not ch.coin(0.45):
            return ch.choice(nv)[0]
        opts = [lambda: "0", lambda: self.tg("int_index", f"{self.t()} - 1")]
        if nv:
            opts += [lambda: self.tg("rev_index", f"{N} - 1 - {ch.choice(nv)[0]}"),
                     lambda: self.tg("floordiv_index", f"{ch.choice(nv)[0]} // 2")]
            tv = [v for v in nv if v[2] == "int_bound"]
            if tv:
                opts.append(lambda: self.tg("int_index", f"{self.t()} - 1 - {ch.choice(tv)[0]}"))
        return _pick(self.ch, opts)

    def mix(self) -> str:
        """An index into an axis of extent M."""
        mv = [v for v in self.scope if v[1] == "M"]
        if mv and not self.ch.coin(0.3):
            return mv[0][0]
        return self.ch.choice(["0", f"{self.M()} - 1"])

    def mod2(self) -> str:
        """An index into an axis of extent 2."""
        if self.scope and not self.ch.coin(0.3):
            return self.tg("mod_index", f"{self.ch.choice(self.scope)[0]} % 2")
        return self.ch.choice(["0", "1"])

    # -- values: (text, big), big when it reads something an earlier nest wrote
    def read(self, name: str, text: str) -> tuple:
        if name in self.live:  # what this nest writes: bounded, so nothing feeds back with a gain
            return self.ch.choice([f"tanh({text})", f"({text} / (1.0 + abs({text})))"]), False
        return text, name in self.dirty

    def leaf(self, big_ok: bool = True) -> tuple:
        ch, N = self.ch, self.N
        opts = [lambda: self.read("A", f"{self.A()}[{self.ix()}, {self.ix()}]"),
                lambda: self.read("x", f"{self.x()}[{self.ix()}]"),
                lambda: self.read("B", f"{self.B()}[{self.ix()}, {self.mix()}]"),
                lambda: (f"{self.h()}[{self.mod2()}]", False),
                lambda: (self.b.scalar("alpha"), False),
                lambda: (self.tg("dim_value", ch.choice([f"(1.0 / {N})", f"{N} * 0.5"])), False),
                lambda: (self.tg("int_value", self.t()), False)]
        outs = [(n, f) for n, f in (("C", lambda: f"{self.C()}[{self.ix()}, {self.ix()}]"),
                                    ("y", lambda: f"{self.y()}[{self.ix()}]"),
                                    ("p", lambda: f"{self.p()}[{self.mod2()}]"))
                if self.exists(n) or n in self.live]
        sc = [s for s in self.scalars if big_ok or s in self.live or s not in self.dirty]
        if big_ok:
            opts += [lambda n=n, f=f: self.read(n, f()) for n, f in outs]
        else:  # only what this nest writes: read bounded
            opts += [lambda n=n, f=f: self.read(n, f()) for n, f in outs if n in self.live]
            opts[:3] = [lambda o=o: self._unbig(o) for o in opts[:3]]
        if sc:
            opts.append(lambda: self._scalar(sc))
        return _pick(ch, opts)

    def _scalar(self, names: list) -> tuple:
        s = self.ch.choice(names)
        return self.read(s, s)

    def _unbig(self, opt) -> tuple:
        text, big = opt()
        return (f"tanh({text})", False) if big else (text, False)

    def expr(self, d: int = 0, big_ok: bool = True) -> tuple:
        ch = self.ch
        if d >= 2 or not ch.coin(0.55):
            return self.leaf(big_ok)
        k = ch.choice(["add", "mul", "scale", "div", "safe_div", "pow", "max", "min", "abs", "ifexp", "relu", "tanh"])
        self.b.tag("e_" + k)
        a, ab = self.expr(d + 1, big_ok)
        if k in ("add", "max", "min"):
            c, cb = self.expr(d + 1, big_ok)
            text = {"add": f"{a} {ch.choice(['+', '-'])} {c}", "max": f"max({a}, {c})",
                    "min": f"min({a}, {c})"}[k]
            return (f"({text})" if k == "add" and d else text), ab or cb
        if k == "mul":
            c, cb = self.expr(d + 1, big_ok=big_ok and not ab)
            return (f"({a} * {c})" if d else f"{a} * {c}"), ab or cb
        if k == "scale":
            f = _pick(ch, [lambda: "0.5", lambda: self.b.scalar("alpha"), lambda: "2.0"])
            return (f"({f} * {a})" if d else f"{f} * {a}"), ab
        if k == "div":
            c = ch.choice(["2.0", self.N, "4.0"])
            if c == self.N:
                self.b.tag("dim_value")
            return (f"({a} / {c})" if d else f"{a} / {c}"), ab
        if k == "safe_div":
            c, _ = self.expr(d + 1)
            return (f"({a} / (1.0 + abs({c})))" if d else f"{a} / (1.0 + abs({c}))"), ab
        if k == "pow":
            base, _ = self.leaf(big_ok=False)
            return f"{base} ** {ch.choice([2, 3])}", False
        if k == "abs":
            return f"abs({a})", ab
        if k == "relu":
            return f"relu({a})", ab
        if k == "tanh":
            return f"tanh({a})", False
        c, cb = self.expr(d + 1, big_ok)
        text = f"{a} if {self.cond()} else {c}"
        return (f"({text})" if d else text), ab or cb

    # -- conditions
    def vcond(self) -> str:
        """A condition on loop variables (and dims, `t`)."""
        ch, N, vs = self.ch, self.N, [v[0] for v in self.scope]
        if len(vs) >= 2 and not ch.coin(0.3):
            a, c = ch.choice(vs), ch.choice(vs)
            if a == c:
                a, c = vs[-2], vs[-1]
            return ch.choice([f"{c} < {a}", f"{c} <= {a}", f"{a} == {c}", f"{a} != {c}", f"{a} + {c} < {N}",
                              f"{c} > {a} and {a} % 2 == 0"])
        a = ch.choice(vs)
        return _pick(ch, [lambda: f"{a} > 0", lambda: f"{a} % 2 == 0", lambda: f"{a} < {N} - 1",
                          lambda: f"not {a} == 0", lambda: self.tg("int_value", f"{a} < {self.t()}")])

    def dcond(self) -> str:
        """A condition on data."""
        ch = self.ch
        a, _ = self.leaf()
        c = _pick(ch, [lambda: "0.0", lambda: self.leaf()[0], lambda: "0.5"])
        return f"{a} {ch.choice(['>', '<', '>=', '<=', '!='])} {c}"

    def cond(self) -> str:
        kind = self.ch.choice(["data", "var", "both"] if self.scope else ["data"])
        self.b.tag("cond_" + kind)
        if kind == "data":
            return self.dcond()
        if kind == "var":
            return self.vcond()
        return f"{self.vcond()} {self.ch.choice(['and', 'or'])} {self.dcond()}"

    # -- statements
    def target(self, names: list | None = None) -> str:
        name = self.ch.choice(names or self.targets)
        text = {"C": lambda: f"{self.C()}[{self.ix()}, {self.ix()}]", "y": lambda: f"{self.y()}[{self.ix()}]",
                "x": lambda: f"{self.x()}[{self.ix()}]",
                "p": lambda: f"{self.p()}[{self.mod2()}]"}.get(name, lambda: name)()
        self.written(name)
        return text

    def once(self, tgt: str) -> bool:
        """Whether `tgt` is written at most once per iteration of the nest (an element whose
        index names every enclosing loop variable one-to-one)."""
        if "[" not in tgt or "//" in tgt or "%" in tgt:
            return False
        return all(re.search(rf"\b{v}\b", tgt) for v, _, _ in self.scope)

    def factor(self, tgt: str) -> str:
        ch, N = self.ch, self.N
        if self.once(tgt):
            return _pick(ch, [lambda: "0.5", lambda: self.b.scalar("beta"), lambda: "2.0",
                              lambda: self.b.scalar("alpha"), lambda: self.tg("dim_value", f"(1.0 / {N})"),
                              lambda: self.tg("data_factor", self.leaf(False)[0])])
        return ch.choice(["0.5", "0.75", self.tg("dim_value", f"(1.0 / {N})")])

    def divisor(self, tgt: str) -> str:
        ch, N = self.ch, self.N
        opts = [lambda: "2.0", lambda: f"(1.0 + abs({self.expr(1)[0]}))", lambda: self.tg("dim_value", N)]
        if self.once(tgt):
            opts += [lambda: self.b.scalar("beta"), lambda: self.tg("int_value", self.t())]
        return _pick(ch, opts)

    def update(self) -> str:
        """One assignment to a target of the nest."""
        ch = self.ch
        tgt = self.target()
        op = ch.choice(["=", "+=", "-=", "*=", "/=", "self", "max"])
        self.b.tag({"=": "assign", "+=": "add_assign", "-=": "sub_assign", "*=": "mul_assign", "/=": "div_assign",
                    "self": "self_op", "max": "maxmin"}[op])
        if op == "*=":
            return f"{tgt} *= {self.factor(tgt)}"
        if op == "/=":
            return f"{tgt} /= {self.divisor(tgt)}"
        if op == "self":  # x[i] = x[i] op e
            return _pick(ch, [lambda: f"{tgt} = {tgt} + {self.expr()[0]}", lambda: f"{tgt} = {tgt} - {self.expr()[0]}",
                              lambda: f"{tgt} = {self.expr(1)[0]} - {tgt}",
                              lambda: f"{tgt} = {tgt} * {self.factor(tgt)}",
                              lambda: f"{tgt} = {tgt} / {self.divisor(tgt)}",
                              lambda: f"{tgt} = {tgt} * {self.factor(tgt)} + {self.expr(1)[0]}",
                              lambda: f"{tgt} = {self.expr(1)[0]} + {tgt}"])
        if op == "max":
            e = self.expr(1)[0]
            return ch.choice([f"{tgt} = max({tgt}, {e})", f"{tgt} = min({e}, {tgt})", f"{tgt} = max({e}, {tgt})",
                              f"{tgt} = min({tgt}, {e})"])
        return f"{tgt} {op} {self.expr()[0]}"

    def stmt(self, depth: int):
        ch, b = self.ch, self.b
        kind = ch.choice(["update", "if_var", "if_data", "ifexp", "chained", "guarded"])
        b.tag("s_" + kind)
        if kind == "update" or (kind == "if_var" and not self.scope):
            b.emit(depth, self.update())
        elif kind in ("if_var", "if_data"):
            b.emit(depth, f"if {self.vcond() if kind == 'if_var' else self.cond()}:")
            b.emit(depth + 1, self.update())
            if ch.coin(0.3):
                b.emit(depth, f"elif {self.cond()}:")
                b.emit(depth + 1, self.update())
            if ch.coin(0.5):
                b.emit(depth, "else:")
                b.emit(depth + 1, self.update())
        elif kind == "ifexp":
            tgt = self.target()
            e1, e2 = self.expr(1)[0], self.expr(1)[0]
            b.emit(depth, f"{tgt} {ch.choice(['=', '+='])} {e1} if {self.cond()} else {e2}")
        elif kind == "chained":  # `a = b = e`; with one target, a new scalar read by what follows
            t1 = self.target()
            t2 = self.target() if len(self.targets) > 1 and ch.coin(0.6) else None
            e = self.expr()[0]
            if t2 is None or t2 == t1:
                t2 = self.fresh("w")
                self.scalars.append(t2)
                self.dirty.add(t2)
            b.emit(depth, f"{t1} = {t2} = {e}" if ch.coin(0.5) else f"{t2} = {t1} = {e}")
        else:  # guarded: in bounds only where the condition on the loop variable holds
            nv = self.nvars()
            if not nv:
                b.emit(depth, self.update())
                return
            v = ch.choice(nv)[0]
            down = ch.coin(0.5)
            sh = f"{v} - 1" if not down else f"{v} + 1"
            b.emit(depth, f"if {v} > 0:" if not down else f"if {v} < {self.N} - 1:")
            rd = _pick(ch, [lambda: self.read("x", f"{self.x()}[{sh}]"),
                            lambda: self.read("A", f"{self.A()}[{self.ix()}, {sh}]"),
                            lambda: self.read("C", f"{self.C()}[{sh}, {self.ix()}]"),
                            lambda: self.read("y", f"{self.y()}[{sh}]")])[0]
            tgt = self.target()
            b.emit(depth + 1, f"{tgt} {ch.choice(['=', '+=', '-='])} {rd} * {self.leaf(False)[0]}")

    # -- sections
    def bound(self, level: int, innermost: bool) -> tuple:
        """(range text, domain, tag) of a loop at `level`."""
        ch, N = self.ch, self.N
        nv = self.nvars()
        if nv and ch.coin(0.6):
            o = nv[-1][0] if not ch.coin(0.3) else ch.choice(nv)[0]
            tag, fmt = ch.choice(_TRI_BOUNDS)
            return fmt.format(o=o, N=N), "N", tag
        opts = list(_TOP_BOUNDS) + ([("M", None)] if innermost and level > 0 else [])
        tag, fmt = ch.choice(opts)
        if tag == "M":
            self.B()  # M is bound by B's shape
            return f"range({self.M()})", "M", "M"
        return fmt.format(N=N, t=self.t() if tag == "int_bound" else None), "N", tag

    def loops(self, level: int, depth: int):
        ch, b = self.ch, self.b
        v = "ijk"[level]
        innermost = level == depth - 1
        rng, dom, tag = self.bound(level, innermost)
        b.tag("b_" + tag)
        b.emit(level, f"for {v} in {rng}:")
        self.scope.append((v, dom, tag))
        n_sc = len(self.scalars)
        if innermost:
            for _ in range(ch.int(1, 3)):
                self.stmt(level + 1)
        else:
            if ch.coin(0.3):
                self.stmt(level + 1)
            accs = []
            if ch.coin(0.5):  # a scalar accumulated by the loops inside, then stored
                accs = [self.fresh("acc")]
                init = _pick(ch, [lambda: "0.0", lambda: "1.0", lambda: self.expr(1)[0]])
                if init == "0.0" and ch.coin(0.3):
                    accs.append(self.fresh("acc"))
                    b.tag("chained")
                b.tag("acc")
                b.emit(level + 1, " = ".join(accs) + f" = {init}")
                self.scalars += accs
                self.targets += accs
                self.live |= set(accs)
            for _ in range(1 if not ch.coin(0.3) else 2):  # one inner loop, or two siblings
                self.loops(level + 1, depth)
            for a in accs:
                self.targets.remove(a)
                self.live.discard(a)
                self.dirty.add(a)
            if accs:
                tgts = [t for t in self.targets if t not in self.scalars or t in self.top]
                tgt = self.target(tgts)
                val = " + ".join(ch.choice([a, f"{self.b.scalar('alpha')} * {a}", f"{a} * 0.5"]) for a in accs)
                b.emit(level + 1, _pick(ch, [lambda: f"{tgt} = {val}", lambda: f"{tgt} += {val}",
                                             lambda: f"{tgt} = {tgt} * {self.factor(tgt)} + {val}"]))
            if ch.coin(0.3):
                self.stmt(level + 1)
        self.scope.pop()
        del self.scalars[n_sc:]

    def nest(self):
        """A 1- to 3-deep nest with random bounds and statements writing 1 or 2 targets."""
        ch, b = self.ch, self.b
        pool = ["C", "y", "s", "x", "p"]
        tgts = [ch.choice(pool)]
        if ch.coin(0.4):
            tgts.append(ch.choice(pool))
        tgts = list(dict.fromkeys(tgts))
        if "s" in tgts:
            if ch.coin(0.3):
                tgts.append("u")
                b.tag("chained")
                b.emit(0, "s = u = " + ch.choice(["0.0", "1.0"]))
            elif "s" not in self.top or ch.coin(0.5):
                b.emit(0, f"s = {_pick(ch, [lambda: '0.0', lambda: '-1.0', lambda: self.leaf()[0]])}")
            for s in ("s", "u"):
                if s in tgts and s not in self.top:
                    self.top.append(s)
                    self.scalars.append(s)
        self.targets, self.live = list(tgts), set(tgts)
        self.loops(0, ch.int(1, 3))
        self.targets, self.live = [], set()

    def template(self):
        """PolyBench shapes (syrk, trmm, trisolv, lu, cholesky, symm) with their spellings varied;
        pivots are kept away from 0 by `1.0 + abs(...)`."""
        ch, b, N = self.ch, self.b, self.N
        kind = ch.choice(["syrk", "trmm", "trisolv", "lu", "cholesky", "symm"])
        b.tag("t_" + kind)
        e = lambda d, s: b.emit(d, s)  # noqa: E731
        if kind == "syrk":
            C, B_ = self.C(), self.B()
            M = self.M()
            self.written("C")
            jb = ch.choice(["range(i + 1)", "range(i)", f"range(i, {N})"])
            scale = _pick(ch, [lambda: f"{C}[i, j] *= {b.scalar('beta')}",
                               lambda: f"{C}[i, j] = {C}[i, j] * {b.scalar('beta')}", lambda: f"{C}[i, j] /= 2.0"])
            upd = _pick(ch, [lambda: f"{C}[i, j] += {b.scalar('alpha')} * {B_}[i, k] * {B_}[j, k]",
                             lambda: f"{C}[i, j] = {C}[i, j] + {B_}[j, k] * {b.scalar('alpha')} * {B_}[i, k]",
                             lambda: f"{C}[i, j] -= {B_}[i, k] * {B_}[j, k] / {N}"])
            form = ch.choice(["split", "acc", "mask"])
            b.tag("syrk_" + form)
            e(0, f"for i in range({N}):")
            if form == "split":
                e(1, f"for j in {jb}:")
                e(2, scale)
                e(1, f"for k in range({M}):")
                e(2, f"for j in {jb}:")
                e(3, upd)
            elif form == "acc":
                acc = self.fresh("acc")
                e(1, f"for j in {jb}:")
                e(2, f"{acc} = 0.0")
                e(2, f"for k in range({M}):")
                e(3, f"{acc} += {B_}[i, k] * {B_}[j, k]")
                e(2, f"{C}[i, j] = {b.scalar('beta')} * {C}[i, j] + {b.scalar('alpha')} * {acc}")
            else:
                e(1, f"for j in range({N}):")
                e(2, f"if {ch.choice(['j <= i', 'j < i', 'j >= i', 'i + j < ' + N])}:")
                e(3, scale)
                e(3, f"for k in range({M}):")
                e(4, upd)
        elif kind == "trmm":
            T, W = (self.B(), self.M()) if ch.coin(0.5) else (self.C(), N)
            A = self.A()
            self.written(T)
            kb = ch.choice([f"range(i + 1, {N})", "range(i)", f"range({N} - 1, i, -1)"])
            e(0, f"for i in range({N}):")
            e(1, f"for j in range({W}):")
            e(2, f"for k in {kb}:")
            e(3, ch.choice([f"{T}[i, j] += {A}[k, i] * {T}[k, j]", f"{T}[i, j] = {T}[i, j] + {A}[k, i] * {T}[k, j]"]))
            e(2, _pick(ch, [lambda: f"{T}[i, j] = {b.scalar('alpha')} * {T}[i, j]",
                            lambda: f"{T}[i, j] *= {b.scalar('alpha')}", lambda: f"{T}[i, j] /= 2.0"]))
        elif kind == "trisolv":
            A, X = self.A(), self.x()
            T = self.y() if ch.coin(0.5) else X
            self.written(T)
            down = ch.coin(0.5)
            e(0, f"for i in {f'range({N} - 1, -1, -1)' if down else f'range({N})'}:")
            if T != X:
                e(1, f"{T}[i] = {X}[i]")
            e(1, f"for j in {f'range(i + 1, {N})' if down else 'range(i)'}:")
            e(2, ch.choice([f"{T}[i] -= {A}[i, j] * {T}[j]", f"{T}[i] = {T}[i] - {T}[j] * {A}[i, j]"]))
            e(1, ch.choice([f"{T}[i] = {T}[i] / (1.0 + abs({A}[i, i]))", f"{T}[i] /= (1.0 + abs({A}[i, i]))"]))
        elif kind in ("lu", "cholesky"):
            S = self.A() if ch.coin(0.5) else self.C()
            self.written(S)
            div = ch.choice([f"{S}[i, j] /= (1.0 + abs({S}[j, j]))", f"{S}[i, j] = {S}[i, j] / (1.0 + abs({S}[j, j]))"])
            e(0, f"for i in range({N}):")
            e(1, "for j in range(i):")
            e(2, "for k in range(j):")
            e(3, f"{S}[i, j] -= {S}[i, k] * {S}[k, j]" if kind == "lu" else f"{S}[i, j] -= {S}[i, k] * {S}[j, k]")
            e(2, div)
            if kind == "lu":
                e(1, f"for j in range(i, {N}):")
                e(2, "for k in range(i):")
                e(3, f"{S}[i, j] -= {S}[i, k] * {S}[k, j]")
            else:
                e(1, "for k in range(i):")
                e(2, ch.choice([f"{S}[i, i] -= {S}[i, k] * {S}[i, k]", f"{S}[i, i] = {S}[i, i] - {S}[i, k] ** 2"]))
                e(1, f"{S}[i, i] = abs({S}[i, i]) + 1.0")
        else:  # symm
            A, B_ = self.A(), self.B()
            M = self.M()
            D = b.tensor("D", N, M)
            self.written(D)
            acc = self.fresh("acc")
            al, be = b.scalar("alpha"), b.scalar("beta")
            e(0, f"for i in range({N}):")
            e(1, f"for j in range({M}):")
            e(2, f"{acc} = 0.0")
            e(2, "for k in range(i):")
            e(3, f"{D}[k, j] += {al} * {B_}[i, j] * {A}[i, k]")
            e(3, f"{acc} += {B_}[k, j] * {A}[i, k]")
            e(2, f"{D}[i, j] = {be} * {D}[i, j] + {al} * {B_}[i, j] * {A}[i, i] + {al} * {acc}")

    def tensor_call(self):
        """A library call on what the loops wrote (or on A): `S @ B`, `relu(S) * alpha + S.T`."""
        ch, b = self.ch, self.b
        S = self.C() if self.exists("C") and ch.coin(0.6) else self.A()
        E = self.fresh("E")
        b.emit(0, f"{E} = " + _pick(ch, [lambda: f"{S} @ {self.B()}",
                                          lambda: f"relu({S}) * {b.scalar('alpha')} + {S}.T",
                                          lambda: f"transpose({S}, (1, 0)) - {S} * 0.5"]))
        b.ret(E)


def gen_language(b: _Builder) -> DataflowProgram:
    """Forms of DESIGN.md's language the other families do not write, mixed with theirs."""
    ch = b.ch
    L = _Lang(b)
    for _ in range(ch.int(1, 3)):
        sec = ch.choice(["nest"] * 10 + ["template"] * 7 + ["tensor_call"] * 3)
        b.tag("sec_" + sec)
        {"nest": L.nest, "template": L.template, "tensor_call": L.tensor_call}[sec]()
    for s in L.top:
        if s in L.dirty:
            b.ret(s)
    if not any(repr(L.N) in a for a in b.params.values()):
        L.x()  # N must be bound by a parameter's shape
    if not b.returns:
        b.ret(L.x())
    return b.finish("language")


# ---------------------------------------------------------------------------- 8. partial stores
# Constant sub-ranges of an axis: (range text, values excluded at the bottom, at the top, tag).
# `{n}` is the axis's dim; every form stays inside 0..n-1 (and is empty for small n).
_SUB = [("range(1, {n})", 1, 0, "from1"), ("range({n} - 1)", 0, 1, "to_n1"), ("range(1, {n} - 1)", 1, 1, "inner"),
        ("range(2, {n})", 2, 0, "from2"), ("range(0, {n} - 2)", 0, 2, "to_n2"),
        ("range({n} - 2, -1, -1)", 0, 1, "down_to_n1"), ("range({n} - 1, 0, -1)", 1, 0, "down_from1")]
_SUB = _SUB * 3 + [("range(1, {n}, 2)", 1, 0, "step2_from1")]  # stepped: a near miss, kept as a loop
# Bounds on an enclosing variable o (values lo..hi of o give the new variable's exclusions).
_TRI = [("range({o}, {n})", "lo", 0, "skew_from"), ("range({o} + 1, {n})", "lo", 1, "skew_after"),
        ("range({o} + 1)", "hi", 0, "tri_incl"), ("range({o})", "hi", 1, "tri"),
        ("range({n} - 1, {o}, -1)", "lo", 1, "skew_down"), ("range({o}, -1, -1)", "hi", 0, "tri_down")]


class _Part:
    """One `partial` program: stores that write part of a tensor's axis. Loop variables are
    (name, dim, lo, hi): the variable stays within lo..dim-1-hi, so `v - d` (d <= lo) and
    `v + d` (d <= hi) index its axis in bounds; a loop run over its whole axis (as the
    lowering widens it) reads those out of bounds, which it must not do.

    Values stay finite as in `_Lang`: what the section being written writes (`live`) is read
    only through a function bounded by 1, a product has at most one factor written before
    (`dirty`), and every divisor is a positive constant, a dim or `1.0 + abs(e)`."""

    BUFS = {"c": ("N", "N"), "r": ("N", "M"), "v": ("N",), "e": ("N", "N", "N")}

    def __init__(self, b: _Builder):
        self.b, self.ch = b, b.ch
        self.L = _Lang(b)  # the parameters A, B, x, alpha and the dim N are shared with `language` sections
        self.N = self.L.N
        self.scope: list = []  # (name, dim, lo, hi)
        self.live: set = set()
        self.scalars: list = []  # scalars readable here
        self.n = 0

    # -- names
    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"

    def dim(self, d: str) -> str:
        return self.N if d == "N" else self.b.dim(d)

    def buf(self, name: str) -> str:
        """A local buffer (zeros or empty: both are zero-filled), allocated at the top."""
        L = self.L
        if name not in L.allocated:
            shape = ", ".join(self.dim(d) for d in self.BUFS[name])
            L.allocated.add(name)
            kind = self.ch.choice(["zeros", "empty"])
            self.b.lines.insert(L.n_alloc, f"    {name} = {kind}(({shape}{',' if len(self.BUFS[name]) == 1 else ''}))")
            L.n_alloc += 1
        return name

    def written(self, name: str):
        self.L.written(name)
        self.live.add(name)

    def W(self) -> str:
        return self.b.tensor("W", self.b.dim("K"), self.N)

    def g(self) -> str:
        return self.b.tensor("g", self.N)

    # -- loops
    def push(self, depth: int, dom: str, kind: str, name: str | None = None) -> tuple:
        """Emit `for v in ...:` over axis `dom` (kind: full, sub, tri) and open its scope."""
        ch = self.ch
        n = self.dim(dom)
        name = name or next(v for v in "ijlmkpq" if v not in [s[0] for s in self.scope])
        encl = [s for s in self.scope if s[1] == dom]
        if kind == "tri" and not encl:
            kind = "sub"
        if kind == "full":
            rng, lo, hi, tag = f"range({n})", 0, 0, "full"
        elif kind == "sub":
            fmt, lo, hi, tag = ch.choice(_SUB)
            rng = fmt.format(n=n)
        else:
            o = encl[-1] if ch.coin(0.7) else ch.choice(encl)
            fmt, side, d, tag = ch.choice(_TRI)
            rng = fmt.format(o=o[0], n=n)
            lo, hi = (o[2] + d, 0) if side == "lo" else (0, o[3] + d)
        self.b.tag(f"{dom}_{tag}")
        self.b.emit(depth, f"for {name} in {rng}:")
        v = (name, dom, lo, hi)
        self.scope.append(v)
        return v

    def pop(self):
        self.scope.pop()

    def kind(self, p_sub: float = 0.5) -> str:
        return "sub" if self.ch.coin(p_sub) else ("tri" if self.scope and self.ch.coin(0.4) else "full")

    # -- indices
    def ix(self, dom: str, shift: bool = True) -> str:
        """An index into an axis of size `dom`: a loop variable (maybe shifted within its
        bounds, or reversed), or a fixed index."""
        ch, n = self.ch, self.dim(dom)
        vs = [v for v in self.scope if v[1] == dom]
        if vs and ch.coin(0.7):
            name, _, lo, hi = ch.choice(vs)
            opts = [lambda: name]
            if shift and lo:
                opts.append(lambda: self.tg("shift_read", f"{name} - {ch.int(1, min(lo, 2))}"))
            if shift and hi:
                opts.append(lambda: self.tg("shift_read", f"{name} + {ch.int(1, min(hi, 2))}"))
            opts.append(lambda: f"{n} - 1 - {name}")
            return name if ch.coin(0.5) else _pick(ch, opts)
        return self.fixed(dom)

    def fixed(self, dom: str) -> str:
        n = self.dim(dom)
        return self.ch.choice(["0", f"{n} - 1"] * 3 + [f"{n} // 2"])

    def tg(self, tag: str, text: str) -> str:
        self.b.tag(tag)
        return text

    # -- values: (text, big)
    def read(self, name: str, text: str) -> tuple:
        if name in self.live:
            return self.ch.choice([f"tanh({text})", f"({text} / (1.0 + abs({text})))", f"0.5 * tanh({text})"]), False
        return text, name in self.L.dirty

    def leaf(self, big_ok: bool = True) -> tuple:
        ch, L = self.ch, self.L
        opts = [lambda: self.read("A", f"{L.A()}[{self.ix('N')}, {self.ix('N')}]"),
                lambda: self.read("x", f"{L.x()}[{self.ix('N')}]"),
                lambda: (f"{self.g()}[{self.ix('N')}]", False),
                lambda: self.read("B", f"{L.B()}[{self.ix('N')}, {self.ix('M')}]"),
                lambda: (f"{self.W()}[{self.ix('K')}, {self.ix('N')}]", False),
                lambda: (self.b.scalar("alpha"), False),
                lambda: (ch.choice(["0.5", "1.0", "2.0", "-1.0"]), False)]
        for name in ("c", "r", "v", "e"):
            if name in L.allocated and (name in L.dirty or name in self.live):
                dims = self.BUFS[name]
                opts.append(lambda name=name, dims=dims: self.read(
                    name, f"{name}[{', '.join(self.ix(d) for d in dims)}]"))
        if "C" in L.dirty and L.exists("C"):
            opts.append(lambda: self.read("C", f"C[{self.ix('N')}, {self.ix('N')}]"))
        if self.scalars:
            opts.append(lambda: (ch.choice(self.scalars), False))
        text, big = _pick(ch, opts)
        if big and not big_ok:
            return f"tanh({text})", False
        return text, big

    def expr(self, d: int = 0, big_ok: bool = True) -> tuple:
        ch = self.ch
        if d >= 2 or not ch.coin(0.5):
            return self.leaf(big_ok)
        k = ch.choice(["add", "mul", "scale", "max", "relu", "tanh", "safe_div", "ifexp"])
        self.b.tag("e_" + k)
        a, ab = self.expr(d + 1, big_ok)
        par = (lambda t: f"({t})") if d else (lambda t: t)
        if k == "add":
            c, cb = self.expr(d + 1, big_ok)
            return par(f"{a} {ch.choice(['+', '-'])} {c}"), ab or cb
        if k == "mul":
            c, cb = self.expr(d + 1, big_ok and not ab)
            return par(f"{a} * {c}"), ab or cb
        if k == "scale":
            return par(f"{ch.choice(['0.5', '2.0', self.b.scalar('alpha')])} * {a}"), ab
        if k == "max":
            c, cb = self.expr(d + 1, big_ok)
            return f"{ch.choice(['max', 'min'])}({a}, {c})", ab or cb
        if k in ("relu", "tanh"):
            return f"{k}({a})", ab and k == "relu"
        if k == "safe_div":
            c, _ = self.expr(d + 1)
            return par(f"{a} / (1.0 + abs({c}))"), ab
        c, cb = self.expr(d + 1, big_ok)
        return par(f"{a} if {self.dcond()} else {c}"), ab or cb

    def dcond(self) -> str:
        a, _ = self.leaf()
        c = _pick(self.ch, [lambda: "0.0", lambda: self.leaf()[0], lambda: "0.5"])
        return f"{a} {self.ch.choice(['>', '<', '>=', '<=', '!='])} {c}"

    def vcond(self) -> str:
        vs = [v[0] for v in self.scope]
        if len(vs) >= 2 and self.ch.coin(0.5):
            a, c = vs[-2], vs[-1]
            return self.ch.choice([f"{c} < {a}", f"{a} == {c}", f"{c} != {a}"])
        a = self.ch.choice(vs)
        return self.ch.choice([f"{a} > 0", f"{a} < {self.N} - 1"] * 2 + [f"{a} % 2 == 0"])

    def cond(self) -> str:
        if self.scope and self.ch.coin(0.3):
            return f"{self.vcond()} {self.ch.choice(['and', 'or'])} {self.dcond()}"
        return self.dcond()

    def store(self, depth: int, tgt: str, name: str):
        """One statement writing element `tgt` of buffer `name`."""
        ch = self.ch
        self.written(name)
        op = ch.choice(["=", "=", "+=", "-=", "*=", "max", "decay"])
        self.b.tag("st_" + op)
        if op == "*=":
            self.b.emit(depth, f"{tgt} *= {ch.choice(['0.5', '0.75'])}")  # no gain: it may run 125 times
        elif op == "max":
            self.b.emit(depth, f"{tgt} = {ch.choice(['max', 'min'])}({tgt}, {self.expr(1)[0]})")
        elif op == "decay":
            self.b.emit(depth, f"{tgt} = 0.5 * {tgt} + {self.expr(1)[0]}")
        else:
            self.b.emit(depth, f"{tgt} {op} {self.expr()[0]}")

    def target(self, name: str, idx: list) -> str:
        return f"{self.buf(name)}[{', '.join(idx)}]"

    # -- sections
    def partial_loop(self):
        """Loops over constant sub-ranges of the axes they store along (either side, any
        level), plain stores at the loop variables, maybe a store shifted by one
        (`c[i + 1, j]`, a near miss: another form) and reads shifted within the sub-range."""
        ch = self.ch
        name = ch.choice(["c", "r", "v", "v", "e"])
        dims = self.BUFS[name]
        order = list(range(len(dims)))
        if len(dims) > 1 and ch.coin(0.3):
            order = ch.perm(order)
            self.b.tag("loops_permuted")
        vs, subs = [None] * len(dims), 0
        for depth, ax in enumerate(order):
            kind = self.kind(0.5 if depth == 0 else 0.35)
            if depth == len(dims) - 1 and not subs:
                kind = "sub"  # at least one loop over part of its axis
            subs += kind == "sub"
            vs[ax] = self.push(depth, dims[ax], kind)
        depth = len(dims)
        for _ in range(ch.int(1, 3)):
            idx = [v[0] for v in vs]
            if ch.coin(0.2):  # near miss: stored along a shifted axis
                ax = ch.choice(range(len(dims)))
                _, _, lo, hi = vs[ax]
                if hi:
                    idx[ax] = f"{idx[ax]} + 1"
                elif lo:
                    idx[ax] = f"{idx[ax]} - 1"
                self.b.tag("shift_store")
            if ch.coin(0.2):
                self.b.emit(depth, f"if {self.cond()}:")
                self.store(depth + 1, self.target(name, idx), name)
                if ch.coin(0.5):
                    self.b.emit(depth, "else:")
                    self.store(depth + 1, self.target(name, idx), name)
            else:
                self.store(depth, self.target(name, idx), name)
        for _ in dims:
            self.pop()

    def diagonal(self):
        """Stores along a diagonal of `c` (2-D) or `e` (3-D), maybe with a fixed index, over
        whole or partial ranges, maybe inside a loop the index does not name (a reduction)."""
        ch = self.ch
        name = ch.choice(["c", "c", "e"])
        v = self.push(0, "N", self.kind(0.4))
        depth = 1
        extra = None
        if name == "e" or ch.coin(0.3):
            extra = self.push(1, ch.choice(["N", "N", "K"]), self.kind(0.3))
            depth = 2
        i = v[0]
        if name == "c":
            idx = [i, i]
        else:
            k = extra[0] if extra and extra[1] == "N" else None
            forms = [[i, i, i], [i, i, self.fixed("N")], [self.fixed("N"), i, i], [i, self.fixed("N"), i]]
            if k:
                forms += [[i, i, k], [i, k, i], [k, i, i]]
            idx = ch.choice(forms)
        self.b.tag("diag_" + name)
        for _ in range(ch.int(1, 2)):
            self.store(depth, self.target(name, idx), name)
        for _ in range(depth):
            self.pop()

    def fixed_index(self):
        """Stores at a fixed index along an axis: inside a loop over the other axes
        (`c[0, j] = x[j]`, all iterations writing one element `v[0] += x[i]`), or as lone
        statements outside any loop (`c[N - 1, 0] = 2.0`, a parameter element `x[0] = ...`)."""
        ch = self.ch
        if ch.coin(0.45):  # lone top-level statements
            self.b.tag("fixed_top")
            for _ in range(ch.int(1, 3)):
                name = ch.choice(["c", "r", "v", "e", "x"])
                if name == "x":
                    self.b.tag("param_elem")
                    self.store(0, f"{self.L.x()}[{self.fixed('N')}]", "x")
                else:
                    self.store(0, self.target(name, [self.fixed(d) for d in self.BUFS[name]]), name)
            return
        self.b.tag("fixed_loop")
        name = ch.choice(["c", "r", "v", "e"])
        dims = self.BUFS[name]
        nloop = ch.int(1, max(1, len(dims) - 1)) if len(dims) > 1 else 1
        vs = []
        for depth in range(nloop):
            dom = ch.choice(dims) if ch.coin(0.8) else "K"
            vs.append(self.push(depth, dom, self.kind(0.3)))
        idx, free = [], list(vs)
        for d in dims:
            fit = [v for v in free if v[1] == d]
            if fit and ch.coin(0.7):
                idx.append(fit[0][0])
                free.remove(fit[0])
            else:
                idx.append(self.fixed(d))
        for _ in range(ch.int(1, 2)):
            self.store(nloop, self.target(name, idx), name)
        for _ in vs:
            self.pop()

    def triangle(self):
        """Covariance-shaped: a triangular nest whose body holds an inner reduction loop into a
        scalar (or into the element), then the element and its mirror stored, maybe the
        diagonal set after the inner loop over j (correlation). Near misses: the scalar
        returned after the nest (set before it), the inner loop under an `if`."""
        ch, b, N = self.ch, self.b, self.N
        c = self.buf("c")
        Wn = self.W()
        K = b.dim("K")
        sq = self.fresh("sq")
        after = ch.coin(0.2)
        if after:  # read after the nest: defined on every path
            b.tag("scalar_after_nest")
            b.emit(0, f"{sq} = 0.0")
        i = self.push(0, "N", "full" if ch.coin(0.6) else "sub")[0]
        j = self.push(1, "N", "tri")[0]
        direct = ch.coin(0.25)
        depth = 2
        if not direct:
            b.emit(2, f"{sq} = " + _pick(ch, [lambda: "0.0", lambda: "0.0", lambda: f"0.5 * tanh({c}[{i}, {j}])",
                                                lambda: self.expr(1, big_ok=False)[0]]))
            self.scalars.append(sq)
        if ch.coin(0.25):
            b.tag("tri_if_loop")
            b.emit(2, f"if {self.cond()}:")
            depth = 3
        k = self.push(depth, "K", "full" if ch.coin(0.75) else "sub", name="k")[0]
        prod = _pick(ch, [lambda: f"{Wn}[{k}, {i}] * {Wn}[{k}, {j}]",
                          lambda: f"({Wn}[{k}, {i}] - {self.L.x()}[{i}]) * ({Wn}[{k}, {j}] - {self.L.x()}[{j}])",
                          lambda: f"{Wn}[{k}, {j}] * {Wn}[{k}, {i}] * {b.scalar('alpha')}"])
        if direct:
            self.written("c")
            b.emit(depth + 1, f"{c}[{i}, {j}] {ch.choice(['+=', '-='])} {prod}")
        else:
            b.emit(depth + 1, ch.choice([f"{sq} += {prod}", f"{sq} = {sq} + {prod}", f"{sq} = max({sq}, {prod})",
                                         f"{sq} -= {prod}"]))
        self.pop()
        if not direct:
            if ch.coin(0.5):
                b.emit(2, ch.choice([f"{sq} = {sq} / {K}", f"{sq} /= (1.0 + {K})", f"{sq} *= 0.5"]))
            self.written("c")
            b.emit(2, f"{c}[{i}, {j}] = " + ch.choice([sq, f"{sq} * 0.5", f"{sq} + {c}[{i}, {j}] * 0.5"]))
        if ch.coin(0.7):
            b.tag("mirrored")
            b.emit(2, f"{c}[{j}, {i}] = " + ch.choice([f"{c}[{i}, {j}]"] + ([sq, f"{sq} * 2.0"] if not direct else [])))
        self.pop()
        if ch.coin(0.35):
            b.tag("tri_diag")
            b.emit(1, f"{c}[{i}, {i}] = " + ch.choice(["1.0", f"{c}[{i}, {i}] + 1.0", self.expr(1, big_ok=False)[0]]))
        self.pop()
        if ch.coin(0.2):
            b.tag("corner")
            b.emit(0, f"{c}[{N} - 1, {N} - 1] = 1.0")
        if after:
            b.ret(sq)
        if sq in self.scalars:
            self.scalars.remove(sq)

    def if_loop(self):
        """A data-dependent `if` around a loop (maybe with elif/else, a loop in the else), inside
        a loop over rows or at the top; the condition may read what the loop writes."""
        ch, b = self.ch, self.b
        top = ch.coin(0.2)
        depth = 0
        if not top:
            self.push(0, "N", self.kind(0.3))
            depth = 1
        else:
            b.tag("if_top")
        name = ch.choice(["c", "r", "v"])
        self.buf(name)
        self.live.add(name)  # the condition may read what the branch writes
        b.emit(depth, f"if {self.cond()}:")
        self.branch(depth + 1, name)
        if ch.coin(0.25):
            b.tag("elif")
            b.emit(depth, f"elif {self.cond()}:")
            self.branch(depth + 1, ch.choice(["c", "r", "v"]))
        if ch.coin(0.75):
            b.emit(depth, "else:")
            if ch.coin(0.5):
                self.branch(depth + 1, ch.choice(["c", "r", "v"]))
            else:
                nm = ch.choice(["c", "r", "v"])
                idx = []
                for d in self.BUFS[nm]:
                    cands = [s for s in self.scope if s[1] == d and s[0] not in idx]
                    idx.append(cands[0][0] if cands and ch.coin(0.8) else self.fixed(d))
                self.store(depth + 1, self.target(nm, idx), nm)
        if not top:
            self.pop()

    def branch(self, depth: int, name: str):
        """The body of a branch: maybe a branch-local scalar, then a loop storing into `name`."""
        ch, b = self.ch, self.b
        q = None
        if ch.coin(0.3):
            q = self.fresh("q")
            b.emit(depth, f"{q} = {self.expr(1, big_ok=False)[0]}")
            b.tag("branch_scalar")
        if q:
            self.scalars.append(q)
        dims = self.BUFS[name]
        outer = [v for v in self.scope]
        # index the first axis by the enclosing row where there is one, loop over the rest
        inner_dom = dims[-1] if len(dims) > 1 or not outer else ch.choice(["N", "K"])
        if ch.coin(0.2):  # the loop under a second `if`
            b.tag("nested_if_loop")
            b.emit(depth, f"if {self.cond()}:")
            depth += 1
        v = self.push(depth, inner_dom, self.kind(0.35))
        idx = []
        for d in dims:
            cands = [s for s in self.scope if s[1] == d and s[0] not in idx]
            idx.append(cands[0][0] if cands and ch.coin(0.85) else self.fixed(d))
        if v[0] not in idx:
            b.tag("branch_reduction")
        self.store(depth + 1, self.target(name, idx), name)
        if ch.coin(0.3):
            self.store(depth + 1, self.target(name, idx), name)
        self.pop()
        if q:
            self.scalars.remove(q)

    def branch_local(self):
        """Scalars local to the branches of an `if` in a loop body, computed unguarded by the
        lowering; near misses: the scalar read after the nest, read before it is set in a
        branch, read by the condition, updated with `+=` first, or read after the `if`."""
        ch, b = self.ch, self.b
        t = self.fresh("bl")
        miss = ch.choice(["none", "none", "none", "after_nest", "read_first", "in_cond", "aug_first", "after_if"])
        b.tag("bl_" + miss)
        if miss != "none":
            b.emit(0, f"{t} = {ch.choice(['0.0', '1.0', self.b.scalar('alpha')])}")
        nl = ch.int(1, 2)
        for d in range(nl):
            self.push(d, "N", self.kind(0.35))
        name = ch.choice(["c", "v", "r"])
        dims = self.BUFS[name]
        idx = []
        for dd in dims:
            cands = [s for s in self.scope if s[1] == dd and s[0] not in idx]
            idx.append(cands[0][0] if cands else self.fixed(dd))
        tgt = self.target(name, idx)
        depth = nl
        cond = self.cond()
        if miss == "in_cond":
            cond = f"{t} {ch.choice(['>', '<'])} {ch.choice(['0.0', self.leaf()[0]])}"
        b.emit(depth, f"if {cond}:")
        if miss == "aug_first":
            b.emit(depth + 1, f"{t} += {self.expr(1, big_ok=False)[0]}")
        else:
            b.emit(depth + 1, f"{t} = {self.expr(1, big_ok=False)[0]}")
        if ch.coin(0.3):  # an `if` inside the branch updating the local
            b.tag("bl_nested_if")
            b.emit(depth + 1, f"if {self.cond()}:")
            b.emit(depth + 2, ch.choice([f"{t} = {self.expr(1, big_ok=False)[0]}", f"{t} += {self.leaf(False)[0]}",
                                         f"{t} = max({t}, {self.leaf(False)[0]})"]))
        self.written(name)
        b.emit(depth + 1, f"{tgt} {ch.choice(['=', '+='])} " + ch.choice([t, f"{t} * 2.0", f"{t} * {t}",
                                                                       f"{t} + {self.expr(1)[0]}"]))
        if ch.coin(0.3):
            b.emit(depth + 1, f"{t} = 0.5 * {t}")
            b.emit(depth + 1, f"{tgt} -= {t}")
        if ch.coin(0.7):
            b.emit(depth, "else:")
            if miss == "read_first":
                b.emit(depth + 1, f"{tgt} = tanh({t})")
            if ch.coin(0.7):
                b.emit(depth + 1, f"{t} = {self.expr(1, big_ok=False)[0]}")
                b.emit(depth + 1, f"{tgt} = {t} - 1.0")
            else:
                self.store(depth + 1, tgt, name)
        if miss == "after_if":
            b.emit(depth, f"{tgt} += tanh({t})")
        for _ in range(nl):
            self.pop()
        if miss == "after_nest":
            if ch.coin(0.5):
                b.ret(t)
            else:
                vv = self.buf("v")
                self.written("v")
                b.emit(0, f"{vv}[0] = {t}")

    def section(self):
        ch = self.ch
        kind = ch.choice(["partial_loop"] * 4 + ["diagonal"] * 2 + ["fixed_index"] * 2 + ["triangle"] * 3
                         + ["if_loop"] * 3 + ["branch_local"] * 3 + ["language"] * 2)
        self.b.tag("sec_" + kind)
        self.live = set()
        if kind == "language":  # a section of the `language` family, mixed in
            L = self.L
            _pick(ch, [L.nest, L.template, L.tensor_call])
            L.targets, L.live = [], set()
        else:
            getattr(self, kind)()
        self.live = set()


def gen_partial(b: _Builder) -> DataflowProgram:
    """Partial stores that the lowering makes total under a mask, mixed with `language` sections."""
    ch = b.ch
    P = _Part(b)
    for _ in range(ch.int(1, 3)):
        P.section()
    for s in P.L.top:
        if s in P.L.dirty:
            b.ret(s)
    if not any(repr(P.N) in a for a in b.params.values()):
        P.L.x()
    if "K" in b.dims and "W" not in b.params:  # a loop over K that reads no W: K is bound by W's shape
        P.W()
    if "M" in b.dims and "B" not in b.params:
        P.L.B()
    if not b.returns:
        b.ret(P.L.x())
    return b.finish("partial")


FAMILIES = {"scalar": gen_scalar, "multi_update": gen_multi_update, "multi_write": gen_multi_write,
            "alias": gen_alias, "tensor_local": gen_tensor_local, "matmul": gen_matmul, "language": gen_language,
            "partial": gen_partial}


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
