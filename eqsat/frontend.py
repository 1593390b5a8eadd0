"""The front end: `@program` parses a function's source into the loop IR (`eqsat.ir`).

Everything outside the language of DESIGN.md is rejected here, at decoration time,
with `file:line:col` and what is wrong. Shapes are checked symbolically (dims are
names); sizes are checked again with concrete numbers when a program is optimized
or run.
"""
from __future__ import annotations

import ast
import builtins
import copy
import dis
import inspect
import types

import numpy as np

from . import aliases, counters, desugar, lang, loopnames, pingpong, reductions, sections
from .args import SIZE_COMPARISONS
from .errors import Loc, ProgramError
from .names import LIB
from .terms import allow_deep_recursion
from .ir import (
    Alloc, Assign, Bin, BoolOp, Call, Compare, Const, Dim, For, If, Index, MatMul, Param, Program, Ref, Select, Store,
    Reshape, Transpose, ie_canon, ie_eval, ie_names, same_expr,
)


def program(fn=None, *, _source=None) -> Program:
    """Decorator: parse `fn` as an eqsat program (see DESIGN.md for the language).
    `_source`: the (lines, first line, file) it was read from before (`Program.current`
    parses that text again, not the file as it may have been edited since)."""
    if fn is None:
        raise ProgramError("@program takes no arguments: write `@program`, not `@program()`", None)
    allow_deep_recursion()  # (a sum of a few hundred terms is that many nested operations)
    try:
        return _Parser(fn, _source).parse()
    except RecursionError:
        code = getattr(fn, "__code__", None)
        loc = Loc(code.co_filename, code.co_firstlineno, 0) if code is not None else None
        raise ProgramError(f"{getattr(fn, '__name__', fn)}: an expression nests too deeply for the front end "
                           f"(tens of thousands of operations in one statement); split it into statements",
                           loc) from None


def _python_number(e) -> bool:
    """Whether expression `e` is made of literals, sizes, loop variables and integer
    parameters alone (Python numbers: no element of a tensor, no scalar parameter)."""
    if isinstance(e, (Const, Dim)):
        return True
    if isinstance(e, Bin) or isinstance(e, Call) and e.fn == "neg":
        return all(_python_number(c) for c in e.children())
    return False


def _same_code(tree: ast.Module, code) -> bool:
    """Whether the function `code.co_name` that `tree` defines compiles to what `code`
    holds: its names, variables, constants and operators (not its exact instructions, which
    depend on the module around it: `np.f` of an imported `np` is an attribute load there).
    True where that cannot be told (the text does not compile alone, or holds no such
    function, or pytest rewrote the function's asserts: its names start with "@py")."""
    if any(n.startswith("@py") for n in code.co_names):
        return True
    try:
        mod = compile(tree, "<eqsat source check>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return True
    stack = list(mod.co_consts)
    while stack:
        c = stack.pop()
        if isinstance(c, types.CodeType):
            if c.co_name == code.co_name and c.co_varnames[:c.co_argcount] == code.co_varnames[:code.co_argcount]:
                return _code_signature(c) == _code_signature(code)
            stack.extend(c.co_consts)
    return True


def _code_signature(code) -> tuple:
    ops = tuple(i.argrepr for i in dis.get_instructions(code)
                if i.opname in ("BINARY_OP", "COMPARE_OP", "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "IS_OP",
                                "CONTAINS_OP"))
    consts = tuple(repr(c) for c in code.co_consts if not isinstance(c, types.CodeType))
    return code.co_names, code.co_varnames, consts, ops


class _Parser:
    def __init__(self, fn, source=None):
        self.fn = fn
        if not inspect.isfunction(fn):
            raise ProgramError(f"@program expects a function, got {type(fn).__name__} {fn!r}", None)
        if source is None:
            try:
                lines, first = inspect.getsourcelines(fn)
                file = inspect.getsourcefile(fn) or "<unknown>"
            except (OSError, TypeError) as e:
                raise ProgramError(f"cannot read the source of {fn!r}: {e}", None) from None
            source = (tuple(lines), first, file)
        self.source = source
        lines, self.first, self.file = source
        src = "".join(lines)
        self.line0 = self.first
        self.indent = 0
        if lines and lines[0][:1].isspace():
            # a nested definition: parse it in place under `if 1:` (dedenting the text would
            # break on a docstring line at column 0); line numbers shift by one
            self.first -= 1
            src = "if 1:\n" + src
        try:
            self.tree = ast.parse(src)
        except SyntaxError as e:
            raise self._stale(f"it does not parse ({e.msg})") from None
        if self.tree.body and isinstance(self.tree.body[0], ast.If):
            self.tree.body = self.tree.body[0].body
        for node in self.tree.body:  # (the passes over the tree name lines in their messages)
            node.eqsat_first_line = self.first
        self.called = {n.func.id for n in ast.walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        self.globals = fn.__globals__
        self.constants: dict = {}  # module-level constants read, as read (`Program.current`)
        self.sym: dict[str, tuple] = {}  # name -> (kind, type)
        # a name bound to a view of a tensor (`v = c`, `v = c.T`, `r = c[i]`) -> (its expression
        # over the memory's owner, the loop depth it was bound at, where); uses are substituted
        self.views: dict = {}
        self.if_stack: list = []  # the `if` statements around the statement read now
        self.dead: dict = {}  # view name -> where it was bound, once its loop has ended
        self.loop_stack: list = []  # per enclosing loop: names declared inside it
        self.loopvars: set[str] = set()
        self.ended_loops: set[str] = set()  # variables of loops that have ended (for a clearer error)
        # names a loop body reads before its own assignment of them: a scalar carried from an
        # earlier iteration (`if i > 0: y[i] = s` then `s = x[i]`), declared when the loop starts
        self.carried: set[str] = set()
        self.return_checks: list = []  # `Program.return_checks`
        self.assertions: list = []  # `Program.assertions`
        self.loop_assertions: list = []  # `Program.loop_assertions`
        # the loops (as `For`s with no body yet) and `(condition, holds)` of the ifs around
        # the statement read now, outermost first (`assert_`)
        self.scopes: list = []
        self.out_dims: set = set()  # dimensions only the return annotation names
        self.locals_: set = set()  # names the function binds (`parse`)
        self._unpacked = 0  # temporaries made for `a, b = b, a` (`unpack`)

    # ------------------------------------------------------------------ helpers
    def check_name(self, node, name: str, what: str):
        """A parameter, dim or loop variable must not hide a function the program calls (a
        tensor named `cos` that is only indexed hides nothing: RoPE's `cos[t, i]`)."""
        if name in RESERVED and name in self.called:
            raise self.err(node, f"{what} {name!r} hides the function {name}(); Python would call the {what} "
                                 "there, eqsat the function: rename it")

    def loc(self, node) -> Loc:
        return Loc(self.file, self.first + getattr(node, "lineno", 1) - 1, getattr(node, "col_offset", 0) + self.indent + 1)

    def err(self, node, msg: str) -> ProgramError:
        return ProgramError(msg, self.loc(node))

    def undefined(self, name: str, size: bool = False) -> str:
        """The message for a name the program cannot read, with what it likely is."""
        out = _undefined(name, self.ended_loops)
        if name in self.ended_loops:
            return out
        if self.enclosing(name):
            return (f"{out}: it is a variable of an enclosing function (a closure), which eqsat does not "
                    f"read; pass it as a parameter (`{name}: f32` or `{name}: int`) or bind it at module level")
        if size:
            return (f"{out}: a size must be a dimension some parameter's annotation names, an `int` "
                    f"parameter, or a module-level integer")
        g = self.globals.get(name)
        if g is not None and not callable(g) and not isinstance(g, type(np)):
            return (f"module-level name {name!r} is a {type(g).__module__}.{type(g).__qualname__}, not a constant "
                    f"the program can read: a module-level constant is a Python int or float, or a numpy "
                    f"floating scalar (`np.float32(0.5)`); pass a tensor as a parameter")
        return out

    def enclosing(self, name: str) -> bool:
        """Is `name` a variable of an enclosing function (a closure cell of the program's)?"""
        return name in self.fn.__code__.co_freevars and bool(self.fn.__closure__)

    def resolve_global(self, name: str):
        """What a name the function does not bind means to Python: an enclosing function's
        variable (a closure cell) first, then the module's globals, then the builtins."""
        if self.enclosing(name):
            try:
                return self.fn.__closure__[self.fn.__code__.co_freevars.index(name)].cell_contents
            except ValueError:  # an empty cell: not yet bound in the enclosing function
                return None
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, None)

    def is_f32_dtype(self, kw: ast.keyword) -> bool:
        """`dtype=np.float32` (or `"float32"`, `f32`) in a buffer's allocation."""
        if kw.arg != "dtype":
            return False
        v = kw.value
        if isinstance(v, ast.Constant):
            return v.value in ("float32", "f4")
        if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name):
            return self.resolve_global(v.value.id) is np and v.attr == "float32"
        return isinstance(v, ast.Name) and self.resolve_global(v.id) in (np.float32, lang.f32)

    def fn_name(self, node) -> str | None:
        """The library function a call's callee names, or None. numpy's own `np.zeros` and
        `np.empty` name the language's buffers (with `dtype=np.float32` or no dtype), and
        `desugar` names the language's functions `eqsat_lib_<name>`."""
        if isinstance(node, ast.Name) and desugar.library_name(node.id):
            return desugar.library_name(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                self.resolve_global(node.value.id) is np and node.attr in ("zeros", "empty"):
            return node.attr
        if isinstance(node, ast.Name):
            obj = self.resolve_global(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id not in self.sym and isinstance(self.resolve_global(node.value.id), type(np)):
            obj = getattr(self.resolve_global(node.value.id), node.attr, None)  # `eqsat.relu`: the module's
        else:
            return None
        if obj is builtins.max:
            return "max"
        if obj is builtins.min:
            return "min"
        if obj is builtins.range:
            return "range"
        if obj is builtins.abs:
            return "abs"
        for table in (lang.UNARY, lang.BINARY, lang.BUILDERS):
            for k, f in table.items():
                if obj is f:
                    return k
        for k, f in lang.SHAPERS.items():
            if obj is f:
                return k
        return None

    # ------------------------------------------------------------------ top level
    def _stale(self, what: str) -> ProgramError:
        return ProgramError(f"the source read for {self.fn.__qualname__} ({self.file}, line {self.line0}) is "
                            f"not the function Python runs: {what}; the file changed since it was imported, or "
                            f"the function was compiled from other text (exec or compile of a string: eqsat reads "
                            f"a program's source from its file). Import it again", Loc(self.file, self.line0, 1))

    def parse(self) -> Program:
        fdefs = [n for n in self.tree.body if isinstance(n, ast.FunctionDef)]
        if not fdefs:
            raise self._stale("it holds no function definition (`def`)")
        fdef = fdefs[0]
        code = self.fn.__code__
        names = [a.arg for a in fdef.args.posonlyargs + fdef.args.args]
        if fdef.name != code.co_name or names != list(code.co_varnames[:code.co_argcount]):
            raise self._stale(f"it defines {fdef.name}({', '.join(names)}), Python's function is "
                              f"{code.co_name}({', '.join(code.co_varnames[:code.co_argcount])})")
        if not code.co_freevars and not _same_code(self.tree, code):
            raise self._stale("its text compiles to other code than the function's")
        # (a decorated function's code starts at its first decorator, which may span lines)
        lo = self.first + min([d.lineno for d in fdef.decorator_list] + [fdef.lineno]) - 1
        hi = self.first + (fdef.end_lineno or fdef.lineno) - 1
        lines = [n for _, _, n in code.co_lines() if n is not None]
        if lines and not lo <= min(lines) <= max(lines) <= hi:
            raise self._stale(f"its definition spans lines {lo}-{hi}, the function's code lines "
                              f"{min(lines)}-{max(lines)}")
        params = self.parse_params(fdef)
        out_dims = self.return_dims(fdef)
        self.out_dims = set(out_dims)
        for x in ast.walk(fdef):  # (before eqsat's own rewrites bind such names)
            if isinstance(x, ast.Name) and x.id.startswith("eqsat_"):
                raise self.err(x, f"{x.id!r}: names starting with 'eqsat_' are reserved for eqsat's temporaries")
        # a top-level loop reusing a name the function binds otherwise, dead after it: renamed
        loopnames.rename_reused(fdef)
        loopnames.rename_nest_locals(fdef)
        loopnames.rename_loop_privates(fdef)  # (a local each of several loops binds first: one each)
        # Python's other spellings of the language's forms (`A[i][j]`, `x.shape[0]`, `np.exp`)
        sizes = {nm for nm, (kind, _) in self.sym.items() if kind == "dim"} | set(out_dims)
        desugar.rewrite(fdef, params, sizes, self.resolve_global)
        refused = [x for x in ast.walk(fdef) if getattr(x, "eqsat_why", None)]
        if refused:  # (a slice read otherwise than numpy reads it: the first, with why)
            x = min(refused, key=lambda x: (x.lineno, x.col_offset))
            raise self.err(x, f"`{getattr(x, 'eqsat_source', None) or ast.unparse(x)}`: {x.eqsat_why}")
        # loops that swap which buffers two names denote: unrolled by two
        pingpong.unroll(fdef, lambda name, stmt: self.buffer_shape(params, name, stmt))
        # integer counters stepped in loops (`idx += 1`) as their closed forms (eqsat/counters.py)
        counters.substitute(fdef, sizes, lambda nm: nm not in self.sym and _int_constant(self.resolve_global(nm)))
        # integer locals naming an index (`ih = 2 * oh + kh - 1`) substituted into their uses
        aliases.substitute(fdef, sizes, lambda nm: nm not in self.sym and _int_constant(self.resolve_global(nm)))
        self.memory = aliases.Memory(fdef, lambda call: self.fn_name(call.func) == "transpose")
        # names the function binds: its locals to Python, whatever the module binds
        self.locals_ = _names(fdef, ast.Store)
        body = list(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # docstring
        if not body or not isinstance(body[-1], ast.Return):
            raise self.err(fdef, "a program must end with `return x` or `return x, y`")
        stmts = []
        for n in body[:-1]:
            live = {v: e for v, (e, _, _) in self.views.items()}
            known = set(self.sym)
            s = self.stmt(n, top=True)
            # (and those the statement binds for its own parts, of memory there before it:
            # `unpack`'s temporaries; not a view of a tensor the statement makes, `y = t` after
            # `t = zeros(...)` in a branch, which the nest binds itself)
            own = {v: e for v, (e, _, _) in self.views.items() if v not in live and _view_parts(e)[0] in known}
            for x in s if isinstance(s, list) else [s] if s is not None else []:
                x.views = {**live, **own}  # views a nest kept as written must bind when it runs
                stmts.append(x)
        ret = body[-1]
        if ret.value is None:
            raise self.err(ret, "`return` needs a value")
        vals = ret.value.elts if isinstance(ret.value, ast.Tuple) else [ret.value]
        returns = tuple(self.expr(v) for v in vals)
        live = {v: e for v, (e, _, _) in self.views.items()}
        for r, v in zip(returns, vals):
            r.node, r.views = v, live  # its source and views: a returned form with no term runs as written
        out_dtypes = self.check_return(fdef, ret, returns)
        dims = []
        for p in params:
            for d in p.shape or ():
                if isinstance(d, str) and d not in dims:
                    dims.append(d)
        dims += [d for d in out_dims if d not in dims]
        kinds = {}
        for s in stmts:
            if isinstance(s, Alloc):
                kinds[s.name] = s.kind
        dims += [p.name for p in params if p.dtype is int]  # integer parameters: sizes given per call
        return Program(fdef.name, params, stmts, returns, dims, self.file, self.fn, self.loc(fdef), kinds,
                       out_dtypes, dict(self.constants), tuple(self.return_checks), tuple(self.assertions),
                       self.source, tuple(self.loop_assertions))

    def parse_params(self, fdef) -> list:
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.err(fdef, "program parameters must be plain positional parameters without defaults")
        ann = getattr(self.fn, "__annotations__", {})
        params = []
        for arg in a.args:
            self.check_name(arg, arg.arg, "parameter")
            t = self.annotation(arg, ann.get(arg.arg))
            if isinstance(t, lang.TensorType):
                shape = t.dims
                for d in shape:
                    if not _valid_dim(d):
                        raise self.err(arg, f"dims of {arg.arg!r} must be names or non-negative ints, got {d!r}")
                for d in shape:
                    if isinstance(d, str):
                        self.check_name(arg, d, "dimension")
                        if d in self.sym and self.sym[d][0] != "dim":
                            raise self.err(arg, f"dimension name {d!r} clashes with a parameter")
                        self.sym[d] = ("dim", None)
                if arg.arg in self.sym:
                    raise self.err(arg, f"parameter {arg.arg!r} clashes with a dimension name")
                ty = tuple(("name", d) if isinstance(d, str) else ("int", d) for d in shape)
                self.sym[arg.arg] = ("tparam", ty)
                params.append(Param(arg.arg, t.dtype, shape, self.loc(arg)))
            elif t is int:
                if arg.arg in self.sym:
                    raise self.err(arg, f"parameter {arg.arg!r} clashes with a dimension name")
                self.sym[arg.arg] = ("dim", None)  # an integer parameter: sizes, bounds, indices, values
                params.append(Param(arg.arg, int, None, self.loc(arg)))
            elif isinstance(t, lang.DType):
                if arg.arg in self.sym:
                    raise self.err(arg, f"parameter {arg.arg!r} clashes with a dimension name")
                self.sym[arg.arg] = ("sparam", None)
                params.append(Param(arg.arg, t, None, self.loc(arg)))
            else:
                raise self.err(arg, f"parameter {arg.arg!r} needs an annotation like f32['M', 'K'], f32 or int, "
                                    f"got {t!r}")
        return params

    def buffer_shape(self, params: list, name: str, stmt) -> list | None:
        """The declared shape, as expressions, of f32 tensor parameter `name` (`stmt` None)
        or of the buffer statement `stmt` allocates (`pingpong.unroll`)."""
        if stmt is None:
            p = next((p for p in params if p.name == name), None)
            if p is None or p.shape is None or p.dtype is not lang.f32:
                return None
            return [ast.Name(id=d, ctx=ast.Load()) if isinstance(d, str) else ast.Constant(d) for d in p.shape]
        v = stmt.value
        if getattr(v, "eqsat_shape", None) is not None:  # `a = A.copy()` (eqsat/desugar.py)
            return list(v.eqsat_shape[0]) if v.eqsat_shape[1] else None
        if isinstance(v, ast.Name) and v.id != name:  # `b = A`: A's memory (`b = A.copy()`, A unread after)
            return self.buffer_shape(params, v.id, None)
        if not (isinstance(v, ast.Call) and self.fn_name(v.func) in ("empty", "zeros") and len(v.args) == 1
                and all(self.is_f32_dtype(k) for k in v.keywords)):
            return None
        return list(v.args[0].elts) if isinstance(v.args[0], ast.Tuple) else [v.args[0]]

    def return_dims(self, fdef) -> list:
        """Dimension names that only the return annotation declares (`-> f32["M"]` over
        `x: f32["N"]`: a decimation's output size), bound like the parameters' dims: the
        body may use them, and their sizes come from the shapes given (`optimize`, and
        `reference(..., shapes=)`), since no argument carries them."""
        try:
            want = self.annotation(fdef, getattr(self.fn, "__annotations__", {}).get("return"))
        except ProgramError:
            return []  # (check_return says what is wrong with it)
        if getattr(want, "__origin__", None) is tuple:
            want = want.__args__
        out = []
        for w in want if isinstance(want, tuple) else [want]:
            for d in getattr(w, "dims", ()) if isinstance(w, lang.TensorType) else ():
                if isinstance(d, str) and _valid_dim(d) and d not in self.sym and d not in out:
                    self.check_name(fdef, d, "dimension")
                    self.sym[d] = ("dim", None)
                    out.append(d)
        return out

    def return_dim(self, fdef, d) -> tuple:
        """A returned tensor's declared extent as an index expression: a name, a
        non-negative int, or an integer expression of sizes (`"H - K + 1"`, `"N // 2"`),
        checked against the returned extent when the sizes are known."""
        if _valid_dim(d):
            return ("name", d) if isinstance(d, str) else ("int", d)
        if isinstance(d, str):
            try:
                e = ast.parse(d.strip(), mode="eval").body
            except SyntaxError:
                e = None
            if e is not None:
                try:
                    t = self.iexpr(e)
                except ProgramError:
                    t = None
                if t is not None and all(self.sym.get(nm, ("",))[0] == "dim" for nm in ie_names(t)):
                    return t
        raise self.err(fdef, f"dims of the returned tensor must be names, non-negative ints or integer "
                             f"expressions of sizes (\"H - K + 1\"), got {d!r}")

    def annotation(self, node, t):
        """An annotation's value; with `from __future__ import annotations` it is a string."""
        if isinstance(t, str):
            try:
                t = eval(t, dict(self.globals))  # noqa: S307 - the user's own annotation text
            except Exception as e:
                raise self.err(node, f"cannot evaluate annotation {t!r}: {e}") from None
        return t

    def check_return(self, fdef, ret, returns) -> tuple:
        """Check the returned values against the annotation; their declared dtypes."""
        notes = getattr(self.fn, "__annotations__", {})
        want = self.annotation(fdef, notes.get("return"))
        if want is None:
            if "return" in notes:  # (`-> None`)
                raise self.err(ret, "returns a value but the annotation declares None")
            return (lang.f32,) * len(returns)
        if getattr(want, "__origin__", None) is tuple:  # tuple[f32[...], f32[...]]
            want = want.__args__
        wants = list(want) if isinstance(want, tuple) else [want]
        if len(wants) != len(returns):
            raise self.err(ret, f"returns {len(returns)} value(s) but the annotation declares {len(wants)}")
        for k, (w, r) in enumerate(zip(wants, returns)):
            if isinstance(w, lang.DType):
                if r.ty is not None:
                    raise self.err(ret, f"returns a tensor of shape {_shape_str(r.ty)} but the annotation "
                                        "declares a scalar")
            elif w in (int, float, bool, complex) and r.ty is not None:
                raise self.err(ret, f"returns a tensor of shape {_shape_str(r.ty)} but the annotation declares "
                                    f"a Python {w.__name__}")
            elif isinstance(w, lang.TensorType):
                ty = tuple(self.return_dim(fdef, d) for d in w.dims)
                if r.ty is None or len(r.ty) != len(ty):
                    raise self.err(ret, f"returns {_shape_str(r.ty)} but the annotation declares {_shape_str(ty)}")
                for axis, (got, declared) in enumerate(zip(r.ty, ty)):
                    if got == declared:
                        continue
                    compound = got[0] not in ("name", "int") or declared[0] not in ("name", "int")
                    # (a dimension only the return annotation names gets its size from the
                    # shapes given: `-> f32["L"]` over `zeros(8)` is checked at that size)
                    own = bool((ie_names(got) | ie_names(declared)) & self.out_dims)
                    if (compound or own) and (ie_names(got) or ie_names(declared)):  # equal at some sizes: checked at those
                        self.return_checks.append((self.loc(ret), k, axis, got, declared))
                        continue
                    if not compound or ie_eval(got, {}) != ie_eval(declared, {}):
                        raise self.err(ret, f"returns {_shape_str(r.ty)} but the annotation declares "
                                            f"{_shape_str(ty)}")
        return tuple(w if isinstance(w, lang.DType) else w.dtype if isinstance(w, lang.TensorType) else lang.f32
                     for w in wants)

    # ------------------------------------------------------------------ statements
    def stmt(self, n, top: bool):
        s = self._stmt(n, top)
        if s is not None and not isinstance(s, list):
            s.node = n  # kept so a nest left as written runs exactly as written
        return s

    def _stmt(self, n, top: bool):
        if isinstance(n, ast.Pass):
            return None
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
            return None
        if isinstance(n, ast.For):
            return self.for_(n)
        if isinstance(n, ast.Assign):
            if len(n.targets) == 1 and isinstance(n.targets[0], (ast.Tuple, ast.List)):
                return self.unpack(n, top)
            if len(n.targets) == 1:
                return self.assign(n, n.targets[0], n.value, aug=None, top=top)
            return self.chained(n, top)
        if isinstance(n, ast.AugAssign):
            if not isinstance(n.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                raise self.err(n, f"only `+=`, `-=`, `*=` and `/=` are supported, not `{_opname(n.op)}=`")
            return self.assign(n, n.target, n.value, aug=type(n.op), top=top)
        if isinstance(n, ast.If):
            return self.if_(n, top)
        if isinstance(n, ast.AnnAssign):
            if n.value is None:
                raise self.err(n, "a bare annotation declares nothing; assign a value")
            return self.assign(n, n.target, n.value, aug=None, top=top)
        if isinstance(n, ast.Return):
            raise self.err(n, "`return` must be the last statement of the program, outside loops")
        if isinstance(n, ast.Assert):
            return self.assert_(n, top)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
            out = next((k for k in n.value.keywords if k.arg == "out"), None)
            called = getattr(n.value, "eqsat_source", None) or ast.unparse(n.value.func).replace(LIB, "")
            if out is not None:
                raise self.err(n, f"unsupported statement: `{called}(..., out=...)`: write the result by assignment, "
                                  f"`{ast.unparse(out.value)} = {called}(...)` (or `[...] = ` for a slice)")
            raise self.err(n, f"unsupported statement: a call whose value is not used (`{called}(...)`): eqsat's "
                              f"programs compute values; assign it")
        raise self.err(n, f"unsupported statement: {type(n).__name__}")

    def chained(self, n: ast.Assign, top: bool):
        """`a = b = e`: e once into the first target, then each next one reads the first."""
        first = ast.Assign(targets=[n.targets[0]], value=n.value)
        ast.copy_location(first, n)
        out = [self.stmt(first, top)]
        src = copy.deepcopy(n.targets[0])
        for node in ast.walk(src):
            if hasattr(node, "ctx"):
                node.ctx = ast.Load()
        for t in n.targets[1:]:
            nxt = ast.Assign(targets=[t], value=src)
            ast.copy_location(nxt, n)
            out.append(self.stmt(nxt, top))
        return [x for x in out if x is not None]

    def assert_(self, n: ast.Assert, top: bool):
        """`assert N % 16 == 0`: a condition on sizes, checked when they are known
        (`Program.assertions`, `args.check_dims`); Python checks it at every call. Inside
        loops and ifs it may read the loop variables too (`assert i + 1 < N`, or the one
        the desugaring writes before `np.max` of a slice `x[i, :i]`, which numpy refuses
        where it is empty): it must hold at every iteration the program runs it
        (`Program.loop_assertions`, `bounds.check_bounds`)."""
        allowed = self.loopvars | set(self.out_dims) | {d for d, k in self.sym.items() if k[0] == "dim"}

        def sizes_only(x):
            if not ie_names(x) <= allowed:
                raise ProgramError("", None)
            return x

        def cond(e):
            if isinstance(e, ast.Constant) and type(e.value) in (bool, int):
                # (`assert False`, an unreachable branch's; a number's truth: not 0)
                return ("cmp", (ast.NotEq,), (("int", int(e.value)), ("int", 0)))
            if isinstance(e, (ast.Name, ast.BinOp)):
                try:  # (`assert i`: an integer's truth)
                    return ("cmp", (ast.NotEq,), (sizes_only(self.iexpr(e)), ("int", 0)))
                except ProgramError:
                    pass
            if isinstance(e, ast.BoolOp):
                return ("and" if isinstance(e.op, ast.And) else "or", tuple(cond(v) for v in e.values))
            if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
                return ("not", cond(e.operand))
            if isinstance(e, ast.Compare) and all(type(o) in SIZE_COMPARISONS for o in e.ops):
                try:
                    return ("cmp", tuple(type(o) for o in e.ops),
                            tuple(sizes_only(self.iexpr(x)) for x in [e.left] + e.comparators))
                except ProgramError:
                    pass
            raise self.err(e, "an `assert` may test sizes only: comparisons of sizes, integer parameters, "
                              "loop variables and constants, with and/or/not")

        msg = n.msg.value if isinstance(n.msg, ast.Constant) and isinstance(n.msg.value, str) else \
            ast.unparse(n.msg) if n.msg is not None else None
        if self.scopes:
            self.loop_assertions.append((self.loc(n), cond(n.test), ast.unparse(n.test), msg, tuple(self.scopes)))
        else:
            self.assertions.append((self.loc(n), cond(n.test), ast.unparse(n.test), msg))
        return None

    def unpack(self, n: ast.Assign, top: bool):
        """`a, b = e1, e2`: Python evaluates every value, then binds the targets left to right.
        Bound one by one in that order, except that a value reading what an earlier target
        binds (`a, b = b, a + b`) is first computed into a temporary."""
        targets, value = n.targets[0].elts, n.value
        if any(isinstance(t, ast.Starred) for t in targets) or not isinstance(value, (ast.Tuple, ast.List)) or \
                any(isinstance(v, ast.Starred) for v in value.elts):
            if isinstance(value, ast.Call):  # (`h, e = np.histogram(a)`: a function returning a tuple)
                raise self.err(n, f"unpacking the result of `{ast.unparse(value.func)}(...)`: a call returns one "
                                  f"value here (unsupported function, or one that returns a tuple); unpacking "
                                  f"assigns a tuple of values written out (`a, b = x, y`)")
            raise self.err(n, "unpacking assigns a tuple of values written out (`a, b = x, y`), without `*`")
        if len(value.elts) != len(targets):
            raise self.err(n, f"{len(targets)} targets but {len(value.elts)} values")
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
            raise self.err(n, "nested unpacking is not supported; assign each name on its own")
        pre, binds = [], []
        written: set = set()  # names the earlier targets bind, and buffers they store into
        stored = False  # an earlier target stores into an element (of a buffer or of a view of it)
        for t, v in zip(targets, value.elts):
            reads = {x.id for x in ast.walk(v) if isinstance(x, ast.Name)}
            if reads & written or (stored and any(isinstance(x, ast.Subscript) for x in ast.walk(v))) or \
                    (stored and reads & set(self.views)):
                if isinstance(v, ast.Name) and (v.id in self.views or
                                                self.sym.get(v.id, ("",))[0] in ("buffer", "tparam")):
                    raise self.err(n, "this exchanges which tensors the names denote; eqsat takes that only as "
                                      "ping-pong buffers: two f32 buffers of one declared shape exchanged (not rotated) in a "
                                      "`for` loop whose variable is not read after it, with no view of them read "
                                      "after it (README); otherwise copy the values (`a[i] = b[i]`) or use new "
                                      "names")
                tmp = f"eqsat_unpack{self._unpacked}"
                self._unpacked += 1
                pre.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=v), n))
                v = ast.copy_location(ast.Name(id=tmp, ctx=ast.Load()), v)
            binds.append(ast.copy_location(ast.Assign(targets=[t], value=v), n))
            if isinstance(t, ast.Name):
                written.add(t.id)
            else:
                stored = True
                written |= {x.id for x in ast.walk(t) if isinstance(x, ast.Name)}
        out = [self.stmt(s, top) for s in pre + binds]
        if pre:  # (`block` puts these in its place: the IR reads the temporaries by name)
            n.eqsat_split = pre + binds
        return [x for s in out for x in (s if isinstance(s, list) else [s]) if x is not None]

    def if_(self, n: ast.If, top: bool):
        cond = self.cond(n.test)
        self.if_stack.append(n)
        try:
            self.scopes.append((cond, True))
            body = self.block(n.body, top)
            self.scopes[-1] = (cond, False)
            orelse = self.block(n.orelse, top)
        finally:
            self.scopes.pop()
            self.if_stack.pop()
        update = _extremum_update(cond, body, orelse)
        if update is not None:  # `if e > m: m = e` is `m = max(m, e)`: a max reduction
            fn, name, e = update
            return Assign(self.loc(n), name, Call(cond.loc, fn, (Ref(cond.loc, name), e)))
        return If(self.loc(n), cond, body, orelse, node=n)

    def block(self, stmts, top):
        out = []
        for b in stmts:
            s = self.stmt(b, top=top)
            if isinstance(s, list):
                out += s
            elif s is not None:
                out.append(s)
        if any(getattr(b, "eqsat_split", None) for b in stmts):
            # the syntax as the statements read it (`unpack`): a nest kept as written runs it
            stmts[:] = [x for b in stmts for x in (getattr(b, "eqsat_split", None) or [b])]
        return out

    def cond(self, e):
        """A condition: comparisons, and/or/not (data-dependent or not)."""
        loc = self.loc(e)
        if isinstance(e, ast.Compare):
            ops = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
            parts, left = [], self.scalar_operand(e.left)
            for op, right in zip(e.ops, e.comparators):
                if type(op) not in ops:
                    raise self.err(e, f"unsupported comparison `{type(op).__name__}`")
                r = self.scalar_operand(right)
                parts.append(Compare(loc, ops[type(op)], left, r))
                left = r
            return parts[0] if len(parts) == 1 else BoolOp(loc, "and", tuple(parts))
        if isinstance(e, ast.BoolOp):
            return BoolOp(loc, "and" if isinstance(e.op, ast.And) else "or", tuple(self.cond(v) for v in e.values))
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return BoolOp(loc, "not", (self.cond(e.operand),))
        # a number's truth, as Python's: `if x[i]:` holds where x[i] != 0 (NaN included)
        try:
            x = self.scalar_operand(e)
        except ProgramError as err:
            raise self.err(e, "a condition must be a comparison (`<`, `<=`, `>`, `>=`, `==`, `!=`), a number "
                              f"(true where it is not 0), or `and`/`or`/`not` of those ({err.message})") from None
        return Compare(loc, "!=", x, Const(loc, 0.0))

    def scalar_operand(self, e):
        x = self.expr(e)
        if x.ty is not None:
            raise self.err(e, "comparisons are between scalars (elements), not whole tensors")
        return x

    def for_(self, n: ast.For) -> For:
        if n.orelse:
            raise self.err(n, "`for ... else` is not supported")
        if not isinstance(n.target, ast.Name):
            raise self.err(n.target, "a loop variable must be a plain name")
        it = n.iter
        if not (isinstance(it, ast.Call) and self.fn_name(it.func) == "range" and not it.keywords
                and 1 <= len(it.args) <= 3):
            raise self.err(it, "loops must be `for v in range(n)`, `range(lo, hi)` or `range(lo, hi, step)`")
        try:
            bounds = [self.index(a) for a in it.args[:2]]  # affine in dims and enclosing loop variables
        except ProgramError as e:
            if "unsupported index expression" not in e.message:
                raise
            raise ProgramError(e.message.replace("unsupported index expression", "unsupported loop bound").replace(
                "(indices must be", "(bounds must be"), e.loc) from None
        lo, hi = (("int", 0), bounds[0]) if len(bounds) == 1 else bounds
        step = 1
        if len(it.args) == 3:
            st = self.iexpr(it.args[2])
            if not _const_int(st):
                raise self.err(it.args[2], "a loop's step must be a nonzero integer constant")
            step = _const_int(st)
        v = n.target.id
        self.check_name(n.target, v, "loop variable")
        if v in self.sym or v in self.loopvars:
            raise self.err(n.target, f"loop variable {v!r} shadows another name")
        self.loopvars.add(v)
        self.loop_stack.append([])
        for name in _read_before_assigned(n.body) - set(self.sym) - self.loopvars:
            # a value an earlier iteration assigns (Python raises where none did: the plan
            # runs that nest as written, `lower.Nest.unbound_reads`)
            self.sym[name] = ("slocal", None)
            self.carried.add(name)
        self.scopes.append(For(self.loc(n), v, lo, hi, [], step=step))
        try:
            body = self.block(n.body, top=False)
        finally:
            self.scopes.pop()
            self.loopvars.discard(v)
            self.ended_loops.add(v)
            self.loop_stack.pop()
            for name, (_, depth, vloc) in list(self.views.items()):
                if depth > len(self.loop_stack):  # a view bound inside the loop ends with it
                    del self.views[name]
                    self.dead[name] = vloc
        return For(self.loc(n), v, lo, hi, body, node=n, step=step)

    def assign(self, n, target, value, aug, top: bool):
        loc = self.loc(n)
        if isinstance(target, ast.Subscript):
            buf, idx = self.subscript_parts(target)
            if aug is None:  # `t[i] = t[i] + e` is `t[i] += e` (a view's store too)
                aug, value = sections.self_update(target, value)
            if buf in self.views:  # a write through a view is a write into the memory it shares
                return self.view_store(n, target, buf, idx, value, aug)
            kind, ty = self.lookup(target.value, buf)
            if kind not in ("buffer", "tparam"):
                raise self.err(target, f"{buf!r} is not a tensor buffer")
            if len(idx) > len(ty):
                raise self.err(target, f"{buf!r} has rank {len(ty)} but is indexed with {len(idx)} indices")
            val = self.expr(value)
            self.check_store(value, buf, ty[len(idx):], val)
            if aug is ast.Sub:
                val = Call(val.loc, "neg", (val,), ty=val.ty)
            return Store(loc, buf, idx, val, aug=aug is not None, aug_op=_AUG.get(aug, "+"))
        if not isinstance(target, ast.Name):
            raise self.err(target, "assignment targets must be a name or an indexed buffer")
        name = target.id
        if name in self.loopvars:
            raise self.err(target, f"cannot assign to loop variable {name!r}")
        if name in self.sym and self.sym[name][0] == "dim":
            raise self.err(target, f"cannot assign to dimension {name!r}")
        if name in self.sym and self.sym[name][0] == "sparam":
            # a scalar parameter is a value passed in: assigning it rebinds the function's own
            # copy, as in Python (the caller's value is untouched), so it is a scalar local
            # from here on, starting from the value passed
            self.sym[name] = ("slocal", None)
        if self.resolve_global(name) is not None and name not in self.sym and self.fn_name(ast.Name(id=name)):
            raise self.err(target, f"{name!r} shadows a library function")
        if aug is not None and name in self.views:
            return self.view_update(n, name, self.expr(value), aug)
        prior_view = None
        if aug is None and name in self.views and self.views[name][1] < len(self.loop_stack):
            # `h = c` before a loop, `h = f(h)` inside it: the first iteration reads `c`'s memory,
            # later ones the new value (a view is read as the tensor it views, which would make
            # every iteration read `c`)
            vloc = self.views[name][2]
            owner = _view_parts(self.views[name][0])[0]
            if owner.startswith("eqsat_"):  # (an array a call made: `acc = np.hstack(...)`, desugar's temporary)
                raise self.err(target, f"{name!r}, bound at line {vloc.line} to an array a call made, is bound again "
                                       f"inside a loop, which eqsat does not read; write the new values into it "
                                       f"(`{name}[:] = ...`), or use another name")
            raise self.err(target, f"{name!r} is a view (bound at line {vloc.line}) rebound inside a loop; make it "
                                   f"a tensor of its own before the loop (`{name} = {owner}.copy()`), or use another "
                                   f"name")
        if aug is None:
            self.check_rebind(target, name)
            prior_view = self.views.pop(name, None)
            self.dead.pop(name, None)
        if isinstance(value, ast.Call) and self.fn_name(value.func) in ("empty", "zeros"):
            if aug is not None:
                raise self.err(n, "cannot augment-assign a new buffer")
            if len(value.args) != 1 or any(not self.is_f32_dtype(k) for k in value.keywords):
                extra = " and no keyword but dtype=np.float32 (buffers are f32)" if value.keywords else ""
                raise self.err(value, f"{self.fn_name(value.func)}(shape) takes one shape tuple{extra}")
            sh = value.args[0]
            elts = sh.elts if isinstance(sh, ast.Tuple) else [sh]
            shape = tuple(self.extent(e) for e in elts)
            self.declare(name, ("buffer", shape))
            return Alloc(loc, name, shape, self.fn_name(value.func))
        if aug is None and self.sym.get(name, ("",))[0] == "slocal":
            aug, value = sections.self_update(target, value)  # `s = s + e` is `s += e`, and * - / alike
        if prior_view is not None:  # `y = relu(y)` with y a view: the value reads the old binding
            self.views[name] = prior_view
            try:
                val = self.expr(value)
            finally:
                del self.views[name]
        else:
            val = self.expr(value)
        if aug is None and val.ty is not None and _view_parts(val) is not None and self.as_view(target, n, name, val):
            # `v = c`, `v = c.T`, `r = c[i]`: a second name for the same memory, as in numpy
            if name in self.sym and self.sym[name][1] is None:
                raise self.err(target, f"{name!r} changes between scalar and tensor")
            if _view_parts(val)[0] == name:  # (at the top of the function desugar renames the view)
                raise self.err(target, f"{name!r} is bound to a view of its own memory: numpy then names the view "
                                       f"and no name is left for the memory; use another name for the view")
            self.views[name] = (val, len(self.loop_stack), loc)
            return None
        if aug is None and prior_view is None:
            # `t = t + e` for a tensor `t` is `t += e` (no view of t is live: check_rebind), so
            # an accumulation of a row or a matrix, `acc = acc + a[i, k] * b[k, :]`, is one
            aug, val = _tensor_self_update(name, val, self.sym.get(name))
        if aug is not None:
            if name not in self.sym:
                raise self.err(target, f"{name!r} is used before it is assigned")
            kind, ty = self.sym[name]
            shown = _AUG_SHOWN[aug]
            try:
                fits = val.ty is None if ty is None else (val.ty is None or _broadcast(ty, val.ty) == tuple(ty))
            except ValueError:
                fits = False
            if not fits:
                raise self.err(value, f"shape mismatch in `{name} {shown}= ...`: "
                                      f"{_shape_str(ty)} and {_shape_str(val.ty)}")
            if ty is not None and (val.ty is None or tuple(val.ty) != tuple(ty)):
                # a scalar or a lower-rank value broadcast into the tensor (`h *= 2.0`, `x += b`):
                # the new value, `h * 2.0`, in full; the same memory where nothing else views it
                for v, (e, _, vloc) in self.views.items():
                    if _view_parts(e)[0] == name:
                        raise self.err(n, f"`{name} {shown}= ...` broadcasts into {name!r} while {v!r} (bound at "
                                          f"line {vloc.line}) views it; write `{name}[...] {shown}= ...` through the "
                                          f"view, or update with a value of {name!r}'s own shape")
                val = Bin(loc, shown, Ref(loc, name, ty=tuple(ty)), val, ty=tuple(ty))
                aug = None
            elif aug is ast.Sub:
                val = Call(val.loc, "neg", (val,), ty=val.ty)
        if name in self.sym and (self.sym[name][1] is None) != (val.ty is None):
            if name in self.carried:
                raise self.err(target, f"{name!r} is read in its loop before this assignment (a value carried "
                                       f"from an earlier iteration), which only a scalar can be; bind the tensor "
                                       f"before the loop")
            raise self.err(target, f"{name!r} changes between scalar and tensor")
        if aug is None:
            # a fresh tensor value owns its memory: a buffer like any other
            self.declare(name, ("slocal", None) if val.ty is None else ("buffer", val.ty))
        return Assign(loc, name, val, aug=aug is not None, aug_op=_AUG.get(aug, "+"))

    def as_view(self, target, n, name: str, val) -> bool:
        """Whether `name = val` (a view of another tensor's memory) binds a view; False:
        a copy. A view whose binding a loop carries -- bound before a loop and anew inside it
        (`h = h0`, then `h = tanh(U @ h)`), or bound in a loop that reads it first (`y += h;
        h = x[t]`) -- is a copy where nothing writes that memory (a copy reads the same), and
        refused where something does and the next iteration reads it."""
        base = _view_parts(val)[0]
        if self.if_stack and base != name and self.memory.read_after(name, self.if_stack[-1], n):
            # bound on a branch and read after it: which memory the name holds there depends
            # on the branch taken, which a view (a second name fixed at compile time) cannot
            # say; a copy can, where it reads the same (`y = t` of a buffer the branch made)
            if not self.memory.written_after(base, n) or base.startswith("eqsat_"):
                return False  # (a temporary eqsat made for this value: nothing else reads it)
            raise self.err(target, f"{name!r} is bound to a view of {base!r} under the `if` at line "
                                   f"{self.loc(self.if_stack[-1]).line} and read after it, while that memory is "
                                   f"written; bind a copy (`{name} = ... + 0.0`) or use another name")
        carried = self.memory.carried(name, n)
        if not (carried or self.memory.rebound_in_another_loop(name, n)):
            return True
        if not self.memory.written(base):
            return False
        if carried and self.memory.fresh_each_iteration(name, base, n):
            return False  # (memory this iteration made, which nothing writes any more)
        if carried:
            raise self.err(target, f"{name!r} is bound to a view of {base!r} in a loop that reads it before this "
                                   f"binding (the next iteration reads this view) while that memory is written; "
                                   f"bind a copy (`{name} = ... + 0.0`) or use another name")
        return True  # (rebinding it in the other loop is refused there, with its location)

    def declare(self, name, sym):
        self.sym[name] = sym
        if self.loop_stack and name not in self.loop_stack[-1]:
            self.loop_stack[-1].append(name)

    def check_store(self, node, buf, rest, val):
        if rest:  # a store into a slice: the value broadcasts to it, as in numpy
            deferred: list = []
            try:
                ok = val.ty is None or _broadcast(rest, val.ty, deferred) == tuple(rest)
            except ValueError:
                ok = False
            if ok:
                self.same_extents(node, deferred, "numpy stores a value into a slice only where their extents "
                                                  "are equal")
            if not ok:
                raise self.err(node, f"shape mismatch: storing {_shape_str(val.ty)} into "
                                     f"{buf}[...] of shape {_shape_str(rest)}")
        elif val.ty is not None:
            raise self.err(node, f"shape mismatch: storing a tensor of shape {_shape_str(val.ty)} "
                                 f"into the element {buf}[...]")

    def check_rebind(self, node, name):
        """`c = ...` while a view of `c` is live would leave the view on the old memory."""
        for v, (e, _, vloc) in self.views.items():
            if v != name and _view_parts(e)[0] == name:
                raise self.err(node, f"{name!r} is rebound while {v!r} (bound at line {vloc.line}) is a view of "
                                     f"its memory; update it in place (`{name}[...] = ...`) or use a new name")

    def view_store(self, n, target, name, idx, value, aug):
        """`v[idx] = value` for a view `v`: the same store on the memory it views."""
        base, full_idx = self.through_view(target, name, idx, "a store into part of")
        val = self.expr(value)
        bty = self.sym[base][1]
        self.check_store(value, name, bty[len(full_idx):], val)
        if aug is ast.Sub:
            val = Call(val.loc, "neg", (val,), ty=val.ty)
        return Store(self.loc(n), base, full_idx, val, aug=aug is not None, aug_op=_AUG.get(aug, "+"))

    def view_update(self, n, name, val, aug):
        """`v += e` for a view `v` updates the memory it shares, in place."""
        view = self.views[name][0]
        base, lead, perm = _view_parts(view)
        if val.ty is not None and _broadcast(view.ty, val.ty) != tuple(view.ty):
            raise self.err(n, f"shape mismatch in `{name} {_AUG_SHOWN[aug]}= ...`: {_shape_str(view.ty)} and "
                              f"{_shape_str(val.ty)}")
        if aug is ast.Sub:
            val = Call(val.loc, "neg", (val,), ty=val.ty)
        loc = self.loc(n)
        new = Bin(loc, _AUG.get(aug, "+"), _fresh(view, loc), val, ty=view.ty)
        if perm is not None:
            inv = tuple(perm.index(a) for a in range(len(perm)))
            new = Transpose(loc, new, inv, ty=tuple(new.ty[p] for p in inv))
        if lead:
            return Store(loc, base, tuple(lead), new)
        return Assign(loc, base, new)

    # ------------------------------------------------------------------ index / extent
    def subscript_parts(self, node: ast.Subscript):
        if not isinstance(node.value, ast.Name):
            v = node.value
            if isinstance(v, ast.Attribute) and v.attr == "shape":
                raise self.err(node, f"`{ast.unparse(node)}`: a shape is read from the declaration of a tensor "
                                     "parameter or buffer the function binds once (eqsat/desugar.py); use the "
                                     "dimension's name")
            raise self.err(node, "only named tensors can be indexed")
        s = node.slice
        elts = s.elts if isinstance(s, ast.Tuple) else [s]
        idx = []
        for e in elts:
            if isinstance(e, ast.Slice):
                why = getattr(node, "eqsat_why", None)
                ty = self.sym.get(node.value.id, (None, None))[1]
                if why is None and ty is not None and len(elts) > len(ty):
                    why = (f"{node.value.id!r} has rank {len(ty)} but is indexed with {len(elts)} indices "
                           f"(slices included)")
                raise self.err(e, f"`{ast.unparse(node)}`: " + (why or (
                    "this slice is not supported here: a slice of a named tensor of known shape is read or "
                    "stored element by element (bounds are integer expressions, a negative constant counts "
                    "from the end, a step is a positive constant or -1 over a whole axis), in arithmetic, "
                    "library functions, `@`, sums and stores into a slice")))
            idx.append(self.index(e))
        return node.value.id, tuple(idx)

    def index(self, e) -> tuple:
        t = self.iexpr(e)
        for nm in ie_names(t):
            if nm not in self.loopvars and self.sym.get(nm, ("",))[0] != "dim":
                hint = ("; a scalar local is a value, not an index, unless it is assigned once, to +, - and * "
                        "of loop variables, sizes and integers, and used only after that in its block (ii = i + "
                        "di - 1, then x[ii]), or a counter set once and stepped by a constant (k += 1) only "
                        "in `for` loops over ranges that no other loop variable bounds; otherwise write its "
                        "expression in the index itself"
                        if self.sym.get(nm, ("",))[0] == "slocal" else "")
                raise self.err(e, f"index uses {nm!r}, which is neither a loop variable nor a dimension{hint}")
        def fail(msg):
            raise self.err(e, msg)

        _check_affine(t, self.loopvars, fail)
        return t

    def extent(self, e) -> tuple:
        t = self.iexpr(e)
        for nm in ie_names(t):
            if nm in self.loopvars:
                raise self.err(e, f"shapes must not depend on loop variable {nm!r}")
            if self.sym.get(nm, ("",))[0] != "dim":
                raise self.err(e, f"{nm!r} is not a dimension name")
        return t

    def module_constant(self, e: ast.Name):
        """The module constant name `e` reads (an int, a float, a np.float32 or a np.float64), or None. A name the function
        also assigns is a local of the whole function to Python, so reading it before the
        assignment raises UnboundLocalError: refused here."""
        if e.id in self.loopvars or e.id in self.sym:
            return None
        g = self.globals.get(e.id)
        if not _constant(g):
            return None
        if e.id in self.locals_:
            raise self.err(e, f"{e.id!r} is read before it is assigned: the function assigns it, so Python "
                              f"reads it as a local, not as the module's constant (UnboundLocalError)")
        self.constants[e.id] = g
        if isinstance(g, (np.float32, np.float64)):
            return g  # (numpy's: `expr` reads it as np.float32 or np.float64 of its value)
        return float(g) if isinstance(g, np.floating) else g

    def iexpr(self, e) -> tuple:
        if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return ("int", e.value)
        if isinstance(e, ast.Name):
            if e.id not in self.loopvars and e.id not in self.sym:
                g = self.module_constant(e)
                if _int_constant(g):
                    return ("int", g)  # a module-level integer constant
                raise self.err(e, self.undefined(e.id, size=True))
            return ("name", e.id)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return ("neg", self.iexpr(e.operand))
        if isinstance(e, ast.BinOp):
            ops = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv", ast.Mod: "mod"}
            if type(e.op) in ops:
                return (ops[type(e.op)], self.iexpr(e.left), self.iexpr(e.right))
        raise self.err(e, f"unsupported index expression: {ast.unparse(e)!r} (indices must be affine in "
                          "loop variables, with integer constants and dimensions)")

    def through_view(self, node, name, idx, what):
        """A view's index as (the owner of its memory, the index there)."""
        view = self.views[name][0]
        base, lead, perm = _view_parts(view)
        rank = len(view.ty)
        if len(idx) > rank:
            raise self.err(node, f"{name!r} has rank {rank} but is indexed with {len(idx)} indices")
        if perm is not None:
            if len(idx) != rank:
                raise self.err(node, f"{what} the transposed view {name!r} is not supported; index every axis "
                                     "or index the tensor it views")
            full = [None] * rank
            for a, p in enumerate(perm):
                full[p] = idx[a]
            idx = tuple(full)
        return base, tuple(lead) + tuple(idx)

    def view_index(self, node, name, idx):
        """`v[idx]` for a view `v`: the element or slice of the memory it views."""
        base, full_idx = self.through_view(node, name, idx, "a slice of")
        rest = tuple(self.sym[base][1][len(full_idx):])
        return Index(self.loc(node), base, full_idx, ty=rest or None)

    def lookup(self, node, name):
        if name in self.dead:
            if name in self.sym:  # rebound inside the loop: after it, the name is whichever
                # memory the last iteration bound (or the old one, if none ran)
                raise self.err(node, f"{name!r} is bound to another tensor's memory inside a loop (line "
                                     f"{self.dead[name].line}) and used after it, where it names whatever the "
                                     f"last iteration bound; write into it instead (`{name}[...] = ...`), or "
                                     "bind it again after the loop")
            raise self.err(node, f"{name!r} is a view bound inside a loop (line {self.dead[name].line}); "
                                 "use it inside that loop, or bind it again after")
        if name in self.loopvars:
            raise self.err(node, f"loop variable {name!r} cannot be used as a value")
        if name not in self.sym:
            if self.fn_name(ast.Name(id=name)):
                raise self.err(node, f"{name!r} is a function; call it")
            raise self.err(node, self.undefined(name))
        return self.sym[name]

    # ------------------------------------------------------------------ value expressions
    def expr(self, e):
        loc = self.loc(e)
        if isinstance(e, ast.Constant):
            if isinstance(e.value, bool) or not isinstance(e.value, (int, float)):
                raise self.err(e, f"unsupported constant {e.value!r}")
            return Const(loc, float(e.value))
        if isinstance(e, ast.Name):
            if e.id in self.views:
                return _fresh(self.views[e.id][0], loc)
            if e.id in self.loopvars:
                return Dim(loc, e.id)  # a loop variable's value (in a condition or an expression)
            g = self.module_constant(e)
            if isinstance(g, (np.float32, np.float64)):
                # `ALPHA = np.float32(0.1)`: a float32, as np.float32(0.1) is; a np.float64 is
                # numpy's strong float64 (`x[i] * F` computes in float64), which no term is:
                # its nest runs as written (`lang.NO_TERM`)
                return Call(loc, type(g).__name__, (Const(loc, float(g)),))
            if g is not None:
                return Const(loc, float(g))  # a module-level constant
            kind, ty = self.lookup(e, e.id)
            if kind == "dim":
                return Dim(loc, e.id)  # `1.0 / N`: the size as a number
            return Ref(loc, e.id, ty=ty)
        if isinstance(e, ast.Subscript):
            base, idx = self.subscript_parts(e)
            if base in self.views:
                return self.view_index(e, base, idx)
            kind, ty = self.lookup(e.value, base)
            if ty is None:
                raise self.err(e, f"{base!r} is a scalar and cannot be indexed")
            if len(idx) > len(ty):
                raise self.err(e, f"{base!r} has rank {len(ty)} but is indexed with {len(idx)} indices")
            rest = tuple(ty[len(idx):])
            return Index(loc, base, idx, ty=rest or None)
        if isinstance(e, ast.Attribute):
            if e.attr != "T":
                raise self.err(e, f"unsupported attribute `.{e.attr}`")
            x = self.expr(e.value)
            if x.ty is None:
                raise self.err(e, "`.T` of a scalar")
            perm = tuple(reversed(range(len(x.ty))))
            return Transpose(loc, x, perm, ty=tuple(x.ty[p] for p in perm))
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.USub):
                x = self.expr(e.operand)
                if isinstance(x, Const):  # `-0.5` is a literal, as the constant rules expect
                    return Const(loc, -x.value)
                if _integer(x):  # (`-i` of an int is 0 at 0, not -0.0: `0.0 - i`, the same number)
                    return Bin(loc, "-", Const(loc, 0.0), x)
                return Call(loc, "neg", (x,), ty=x.ty)
            if isinstance(e.op, ast.UAdd):
                return self.expr(e.operand)
            raise self.err(e, f"unsupported operator {type(e.op).__name__}")
        if isinstance(e, ast.BinOp):
            a, b = self.operand(e, e.left, e.right), self.operand(e, e.right, e.left)
            if isinstance(e.op, ast.MatMult):
                if getattr(e, "eqsat_dot", False) and any(len(x.ty or ()) > 2 for x in (a, b)):
                    raise self.err(e, "np.dot of a tensor with more than two axes is not a matmul (it pairs every "
                                      "leading index of one with every one of the other); write `a @ b` or loops")
                return self.matmul(e, a, b)
            if isinstance(e.op, ast.Pow):
                return self.power(e, a, b)
            ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
            if type(e.op) not in ops:
                raise self.err(e, f"unsupported operator `{_opname(e.op)}`")
            if ops[type(e.op)] in ("/", "//", "%") and isinstance(b, Const) and b.value == 0 and _python_number(a):
                # (of an element, numpy's inf or NaN with a warning: a value the plan computes too)
                raise self.err(e, f"`{ast.unparse(e)}`: a division of a Python number by zero, which raises "
                                  f"ZeroDivisionError in Python")
            return Bin(loc, ops[type(e.op)], a, b, ty=self.bcast(e, a.ty, b.ty))
        if isinstance(e, ast.IfExp):
            c = self.cond(e.test)
            a, b = self.expr(e.body), self.expr(e.orelse)
            if a.ty is not None or b.ty is not None:
                raise self.err(e, "`a if cond else b` chooses between scalars (elements), not tensors")
            return Select(loc, c, a, b)
        if _is_condition(e):
            raise self.err(e, "a comparison is a condition: use it in `if` or `a if cond else b`, not as a value")
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, ast.Tuple):
            raise self.err(e, "a tuple is not a value here: unpack it (`n, m = x.shape`, `a, b = b, a`) or return it")
        raise self.err(e, f"unsupported expression: {type(e).__name__}")

    def operand(self, e: ast.BinOp, x, other):
        """An operand of arithmetic `e`: a condition meeting a number in `+ - * /` is 1.0
        where it holds and 0.0 elsewhere, as Python and numpy promote a bool meeting a float
        (`s * (s > 0)`; desugar does so where it knows the shapes, this where the front end
        does: elements); two conditions only under `*` (numpy's `m1 + m2` of bools is an or)."""
        if _is_condition(x) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)) and \
                (not _is_condition(other) or isinstance(e.op, ast.Mult)):
            loc = self.loc(x)
            return Select(loc, self.cond(x), Const(loc, 1.0), Const(loc, 0.0))
        return self.expr(x)

    def power(self, node, a, b):
        """`x ** c`: for a constant c, a small integer power is a product; anything else a
        power (of a number as its exponent: its nest runs as written)."""
        if not isinstance(b, Const):
            if b.ty is not None:
                raise self.err(node, "`**` takes a number as its exponent, not a tensor")
            return Bin(self.loc(node), "**", a, b, ty=a.ty)
        c = b.value
        if c == 0.5 and a.ty is not None:
            # (numpy's power of an array by 0.5 is its sqrt: nan at -inf, -0.0 at -0.0, where
            # a scalar's `** 0.5` is C's pow: inf and 0.0)
            return Call(self.loc(node), "sqrt", (a,), ty=a.ty)
        if float(c).is_integer() and 1 <= abs(c) <= 8:
            # each factor its own copy: the dataflow analysis keys every read by its node; a
            # negative power is a power of the reciprocal (`1 / (x * x)` overflowed to 0 where
            # pow's result is a subnormal: x = 1e20)
            loc = self.loc(node)

            def factor():
                x = copy.deepcopy(a)
                return Bin(loc, "/", Const(loc, 1.0), x, ty=a.ty) if c < 0 else x

            out = factor()
            for _ in range(int(abs(c)) - 1):
                out = Bin(loc, "*", out, factor(), ty=a.ty)
            return out
        return Bin(self.loc(node), "**", a, b, ty=a.ty)

    def bcast(self, node, ta, tb):
        if ta is None:
            return tb
        if tb is None:
            return ta
        deferred: list = []
        try:
            out = _broadcast(ta, tb, deferred)
        except ValueError:
            raise self.err(node, f"shape mismatch: cannot broadcast {_shape_str(ta)} with {_shape_str(tb)}") \
                from None
        self.same_extents(node, deferred, "numpy broadcasts these extents together only where they are equal")
        return out

    def same_extents(self, node, pairs: list, why: str) -> None:
        """Extents taken as equal (`_broadcast`), each checked when the sizes are known as an
        assertion of the program's (`Program.assertions`), naming this place."""
        for x, y in pairs:
            self.assertions.append((self.loc(node), ("cmp", (ast.Eq,), (x, y)), f"{_d(x)} == {_d(y)}", why))

    def matmul(self, node, a, b):
        if a.ty is None or b.ty is None:
            raise self.err(node, "`@` needs tensor operands; use `*` for scalars")
        ra, rb = len(a.ty), len(b.ty)
        if ra == 0 or rb == 0:
            raise self.err(node, "`@` needs tensor operands of at least one axis; use `*` for scalars")
        inner = b.ty[0] if rb == 1 else b.ty[-2]
        x = a.ty[-1]
        if ie_canon(x) != ie_canon(inner):  # (`N * M` is `M * N`)
            if x[0] in ("int", "name") and inner[0] in ("int", "name"):
                raise self.err(node, f"shape mismatch in `@`: {_shape_str(a.ty)} @ {_shape_str(b.ty)} "
                                     f"(contraction {_d(x)} vs {_d(inner)})")
            # a computed extent (`np.reshape(x, (N, -1))`: C * P * P against CPP): taken as
            # the same where the sizes make them equal, as broadcasting does
            self.same_extents(node, [(x, inner)], "numpy's `@` contracts axes of the same length only")
        if ra == 1 or rb == 1:  # numpy's: a vector's axis is contracted and not kept
            if ra == 1 and rb == 1:
                ty = None  # a dot product: a scalar
            elif ra == 1:
                ty = b.ty[:-2] + b.ty[-1:]
            else:
                ty = a.ty[:-1]
            return MatMul(self.loc(node), a, b, ty=ty)
        # batch axes (all but the last two): those of the operand that has them, or the
        # same on both; numpy would also broadcast batch axes of other lengths or extents,
        # which is not read here
        ba, bb = a.ty[:-2], b.ty[:-2]
        if ba and bb and ba != bb:
            raise self.err(node, f"batch axes differ in `@`: {_shape_str(a.ty)} @ {_shape_str(b.ty)} (the "
                                 f"axes before the last two must be the same on both operands, or one operand "
                                 f"must have none; broadcasting them is not supported)")
        return MatMul(self.loc(node), a, b, ty=(ba or bb) + (a.ty[-2], b.ty[-1]))

    def _reduction_why(self, e: ast.Call) -> str | None:
        """Why a reduction of a tensor parameter was not read, where it is its arguments: an
        axis out of range, or a keyword other than `axis` and `keepdims`."""
        f = e.func
        method = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in self.sym
        x = f.value if method else e.args[0] if e.args else None
        if not isinstance(x, ast.Name) or self.sym.get(x.id, (None,))[0] != "tparam":
            return None
        rank = len(self.sym[x.id][1])
        other = [k.arg for k in e.keywords if k.arg not in ("axis", "keepdims")]
        if other:
            return (f"the keyword `{other[0]}=` is not read (a reduction takes `axis=` and `keepdims=`); "
                    f"write the reduction without it")
        axis = next((k.value for k in e.keywords if k.arg == "axis"), None)
        if axis is None:
            args = e.args if method else e.args[1:]
            axis = args[0] if args else None
        if axis is not None and desugar.reduced_axes(axis, rank) is False:
            return (f"axis `{ast.unparse(axis)}` is not an axis of {x.id!r}, which has {rank} axes "
                    f"(axes are constant ints from {-rank} to {rank - 1}, each once)")
        return None

    def call(self, e: ast.Call):
        loc = self.loc(e)
        name = self.fn_name(e.func)
        if name is None and reductions.is_reduction(e.func, self.resolve_global):
            why = self._reduction_why(e)
            if why:
                raise self.err(e, f"`{ast.unparse(e)}`: {why}")
            raise self.err(e, f"`{ast.unparse(e)}`: its operand's shape is not known here; a reduction reads a "
                              f"tensor of declared shape, a name bound once to one (not a name bound again, as "
                              f"in a loop), or elementwise arithmetic, slices and products of those (a product "
                              f"of 3-D operands is not)")
        if name is None and reductions.is_einsum(e.func, self.resolve_global):
            raise self.err(e, f"`{ast.unparse(e)}`: np.einsum is read with a constant spec of letters (no `...`, "
                              f"no keyword but optimize=) over operands of known shape, each with as many axes as its "
                              f"letters, and one declared extent for each letter; not under a condition")
        if name is None and (isinstance(e.func, ast.Attribute) and e.func.attr in ("reshape", "ravel") or
                             reductions.is_numpy(e.func, "reshape", self.resolve_global)):
            unknown = sorted({x.id for a in e.args for x in ast.walk(a) if isinstance(x, ast.Name)} -
                             set(self.sym) - self.out_dims - self.loopvars)
            unknown = [x for x in unknown if self.resolve_global(x) is None]  # (a module constant is a number)
            if unknown:  # (a size no annotation names: that, not the rule below, is what is wrong)
                raise self.err(e, f"`{ast.unparse(e)}`: {', '.join(map(repr, unknown))} is no dimension of this "
                                  f"function: a reshape's sizes are dimensions its annotations name, numbers, or "
                                  f"arithmetic on them")
            raise self.err(e, f"`{ast.unparse(e)}`: a reshape is read as a copy of a tensor of known shape, as an "
                              f"operand, or bound to a name where the function writes no tensor but new buffers "
                              f"and binds neither name again (numpy's reshape is a view of the tensor: a write "
                              f"through either would show in the other); not under a condition")
        if name is None:
            shown = ast.unparse(e.func)
            if isinstance(e.func, ast.Name) and self.enclosing(e.func.id):
                raise self.err(e, f"unsupported function {shown!r}: here it is a variable of the enclosing "
                                  f"function, not one of eqsat's functions")
            raise self.err(e, f"unsupported function {shown!r}")
        if e.keywords:
            kws = ", ".join(f"{k.arg}=" for k in e.keywords)
            raise self.err(e, f"`{ast.unparse(e)}`: keyword arguments ({kws}) are read only where the "
                              f"operand's shape is known here (a tensor of declared shape, or elementwise "
                              f"arithmetic and products of them)")
        if name in ("empty", "zeros"):
            raise self.err(e, f"{name}(...) must be assigned directly to a name (`y = {name}((N,))`), not used "
                              f"inside an expression")
        if name == "range":
            raise self.err(e, "range(...) is only allowed as a loop's iterable")
        if name == "reshape":  # (desugar's: `x.reshape(...)` with its extents worked out, -1 too)
            x = self.expr(e.args[0]) if len(e.args) == 2 else None
            if x is None or x.ty is None or not isinstance(e.args[1], ast.Tuple):
                raise self.err(e, "reshape(x, shape) takes a tensor and a tuple of extents")
            return Reshape(loc, x, ty=tuple(self.extent(d) for d in e.args[1].elts))
        if name == "transpose":
            if not 1 <= len(e.args) <= 2:
                raise self.err(e, "transpose(x, perm) takes a tensor and an optional permutation tuple")
            x = self.expr(e.args[0])
            if x.ty is None:
                raise self.err(e, "transpose of a scalar")
            if len(e.args) == 2:
                p = e.args[1]
                given = [desugar._number(c) for c in p.elts] if isinstance(p, (ast.Tuple, ast.List)) else [None]
                if any(type(a) is not int for a in given):
                    raise self.err(p, "transpose's permutation must be a tuple of integer literals")
                # numpy's: an axis may count from the end (-1 is the last)
                perm = tuple(a + len(x.ty) if -len(x.ty) <= a < 0 else a for a in given)
                if sorted(perm) != list(range(len(x.ty))):
                    raise self.err(e, f"{tuple(given)} is not a permutation of the {len(x.ty)} axes")
            else:
                perm = tuple(reversed(range(len(x.ty))))
            return Transpose(loc, x, perm, ty=tuple(x.ty[p] for p in perm))
        args = tuple(self.expr(a) for a in e.args)
        if getattr(e, "eqsat_of_math", None) and any(a.ty is not None for a in args):
            raise self.err(e, f"{e.eqsat_of_math} takes a number, not a tensor (Python raises TypeError); use "
                              f"numpy's or eqsat's {name}")
        if name in lang.UNARY:
            if len(args) != 1:
                raise self.err(e, f"{name} takes one argument")
            return Call(loc, name, args, ty=args[0].ty)
        if name in ("max", "min") and len(args) >= 2:
            if any(a.ty is not None for a in args):
                raise self.err(e, f"builtin {name}() is for scalars; use {name}imum() on tensors")
            # max(a, b, c) is max(max(a, b), c): Python's max keeps the running result unless a
            # later argument compares greater, so NaN and ties go the same way
            out = Call(loc, name, args[:2])
            for a in args[2:]:
                out = Call(loc, name, (out, a))
            return out
        if len(args) != 2:
            raise self.err(e, f"{name} takes two arguments")
        if name in lang.NO_TERM:  # (arctan2, hypot: numpy's, elementwise)
            return Call(loc, name, args, ty=self.bcast(e, args[0].ty, args[1].ty))
        if name in ("clip_below", "clip_above"):
            # np.clip's sides: `b if b > a else a` (builtin max(a, b): a on a tie and where a
            # is NaN), and b where b is NaN (a number bound is none); min alike
            a, b = args
            ty = self.bcast(e, a.ty, b.ty)
            bounded = Call(loc, "max" if name == "clip_below" else "min", (a, b), ty=ty)
            return bounded if _number(b) else Select(loc, Compare(loc, "!=", b, b), b, bounded, ty=ty)
        fn = "max" if name == "maximum" else "min"
        ty = self.bcast(e, args[0].ty, args[1].ty)
        # numpy's maximum(a, b) is `a if a > b else b` where neither is NaN (b on a tie: the
        # sign of a zero) and NaN where either is. The `max` term (builtin max) is
        # `max(x, y) = y if y > x else x`: NaN in x gives x, NaN in y gives x, a tie x. So
        # `max(b, a)` is numpy's but where a is NaN: `a if a != a else max(b, a)`, exact for
        # every input, reads `b` once. Where `a` is a number other than NaN, `max(b, a)` alone
        # is exact; where `b` is a nonzero number other than NaN, `max(a, b)` is (a tie then
        # is the same number), read once: a chain `h = maximum(h, -0.5)` reads each link
        # once, so `eqsat/prefuse.py` fuses it (minimum alike, with `<`)
        a, b = args
        if _number(a):
            return Call(loc, fn, (b, a), ty=ty)
        if _number(b) and b.value != 0:
            return Call(loc, fn, (a, b), ty=ty)
        return Select(loc, Compare(loc, "!=", a, a), a, Call(loc, fn, (b, a), ty=ty), ty=ty)


_AUG_SHOWN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}  # as the source writes it
_AUG = {**_AUG_SHOWN, ast.Sub: "+"}  # as the term combines it (`-=` adds the negation)


def _number(e) -> bool:
    """`e` is a number literal other than NaN."""
    return isinstance(e, Const) and e.ty is None and e.value == e.value


def _constant(v) -> bool:
    """A module-level number the program reads as a constant: an int or a float, or a numpy
    floating scalar (`ALPHA = np.float32(0.25)`: read as the number it holds)."""
    return isinstance(v, (int, float, np.floating)) and not isinstance(v, bool)


def _integer(e) -> bool:
    """`e` is surely a Python int: a size or loop variable, or `+ - *` of those alone."""
    if isinstance(e, Dim):
        return True
    return isinstance(e, Bin) and e.op in ("+", "-", "*") and _integer(e.a) and _integer(e.b)


def _const_int(t):
    """The value of a constant index expression (no names), else None."""
    if ie_names(t):
        return None
    from .ir import ie_eval

    v = ie_eval(t, {})
    return v or None


def _tensor_self_update(name: str, val, sym):
    """`t + e`, `e + t`, `t - e` for a tensor `t` of the value's own shape as (the augmented
    op, e); else (None, val)."""
    if not (isinstance(val, Bin) and val.op in ("+", "-") and sym is not None and sym[0] == "buffer" and
            val.ty is not None and sym[1] is not None and tuple(val.ty) == tuple(sym[1])):
        return None, val
    if isinstance(val.a, Ref) and val.a.name == name:
        return (ast.Add if val.op == "+" else ast.Sub), val.b
    if val.op == "+" and isinstance(val.b, Ref) and val.b.name == name:
        return ast.Add, val.a
    return None, val


RESERVED = set(lang.UNARY) | set(lang.BINARY) | set(lang.BUILDERS) | {"transpose", "range", "max", "min"}


def _view_parts(e):
    """A view expression as (owner name, leading indices, axis permutation or None); else None."""
    perm = None
    while isinstance(e, Transpose):
        perm = e.perm if perm is None else tuple(e.perm[p] for p in perm)
        e = e.x
    if isinstance(e, Ref) and e.ty is not None:
        return e.name, (), perm
    if isinstance(e, Index) and e.ty is not None:
        return e.base, tuple(e.idx), perm
    return None


def _fresh(view, loc):
    """A copy of a view's expression for one use (each read is its own IR node)."""
    if isinstance(view, Transpose):
        x = _fresh(view.x, loc)
        return Transpose(loc, x, view.perm, ty=view.ty)
    if isinstance(view, Index):
        return Index(loc, view.base, view.idx, ty=view.ty)
    return Ref(loc, view.name, ty=view.ty)


def _int_constant(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _valid_dim(d) -> bool:
    """A dimension in a tensor annotation: a name, or a non-negative int."""
    return (isinstance(d, str) and d.isidentifier()) or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)


def _read_before_assigned(body: list) -> set:
    """Names a loop body reads (as values) inside a conditional branch before any
    assignment of them on the way there, and assigns to a name somewhere in it: what it
    carries from one iteration to the next (`if i > 0: y[i] = s`, then `s = x[i]`). (A read
    every first iteration makes, `acc += x[i]` with no `acc = 0.0` before the loop, stays
    an error.)"""
    out: set = set()

    def visit(stmts, assigned: set, guarded: bool) -> None:
        for st in stmts:
            if isinstance(st, ast.If):
                if guarded:
                    out.update(_names(st.test, ast.Load) - assigned)
                a, b = set(assigned), set(assigned)
                visit(st.body, a, True)
                visit(st.orelse, b, True)
                assigned |= a & b
            elif isinstance(st, ast.For):  # (its body in order; it may run no iteration)
                if guarded:
                    out.update(_names(st.iter, ast.Load) - assigned)
                visit(st.body, set(assigned), guarded)
                assigned |= _names(st, ast.Store)
            else:
                if guarded:
                    out.update(_names(st, ast.Load) - assigned)
                assigned |= _names(st, ast.Store)

    visit(body, set(), False)
    named = set()
    for st in body:
        for x in ast.walk(st):
            if isinstance(x, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                named |= {t.id for t in (x.targets if isinstance(x, ast.Assign) else [x.target])
                          if isinstance(t, ast.Name)}
    return out & named


def _names(node, ctx) -> set:
    """The names `node` reads (`ctx` ast.Load) or binds (ast.Store)."""
    return {x.id for x in ast.walk(node) if isinstance(x, ast.Name) and isinstance(x.ctx, ctx)}


def _undefined(name: str, ended_loops: set) -> str:
    if name in ended_loops:
        return (f"loop variable {name!r} is read after its loop; a loop variable lives in its loop only "
                f"(Python would give its last value: write that value, e.g. N - 1)")
    return f"undefined name {name!r}"


def _check_affine(t, loopvars, fail):
    tag = t[0]
    if tag == "mul":
        if ie_names(t[1]) & loopvars and ie_names(t[2]) & loopvars:
            fail("index is not affine: a product of two loop variables")
    if tag in ("floordiv", "mod") and (ie_names(t[2]) & loopvars or (t[2][0] == "int" and t[2][1] <= 0)):
        fail("`//` and `%` in an index need a positive constant divisor")
    for c in t[1:]:
        if isinstance(c, tuple):
            _check_affine(c, loopvars, fail)


def _is_condition(e) -> bool:
    """A comparison, or `and`/`or`/`not` of values (what `_Parser.cond` reads)."""
    return isinstance(e, (ast.Compare, ast.BoolOp)) or (isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not))


def _broadcast(ta, tb, deferred: list | None = None) -> tuple:
    """numpy's broadcast of two shapes. Extents equal as polynomials in the sizes (and their
    `//` and `%` terms: `ir.ie_canon`) are the same extent; where `deferred` is given, two
    extents of which one is computed (not a bare size or number) and that are not known to
    differ are taken as equal and appended to it as a pair, to check once the sizes are
    known (`(H + 1) // 2` and `H // 2` are equal exactly at even H)."""
    ta, tb = tuple(ta), tuple(tb)
    n = max(len(ta), len(tb))
    ta = (("int", 1),) * (n - len(ta)) + ta
    tb = (("int", 1),) * (n - len(tb)) + tb
    out = []
    for x, y in zip(ta, tb):
        if x == y or y == ("int", 1) or ie_canon(x) == ie_canon(y):
            out.append(x)
        elif x == ("int", 1):
            out.append(y)
        elif deferred is not None and not (x[0] in ("int", "name") and y[0] in ("int", "name")):
            deferred.append((x, y))
            out.append(x)
        else:
            raise ValueError
    return tuple(out)


def _d(x) -> str:
    from .ir import ie_str

    return ie_str(x)


def _shape_str(ty) -> str:
    if ty is None:
        return "a scalar"
    return "[" + ", ".join(_d(x) for x in ty) + "]"


def _opname(op) -> str:
    return {ast.Mult: "*", ast.Div: "/", ast.Mod: "%", ast.Pow: "**", ast.FloorDiv: "//", ast.BitAnd: "&",
            ast.BitOr: "|", ast.LShift: "<<", ast.RShift: ">>", ast.BitXor: "^"}.get(type(op), type(op).__name__)


def _extremum_update(cond, body: list, orelse: list):
    """`if e > m: m = e` (or `m < e`) as ("max", m, e); `if e < m: m = e` (or `m > e`) as
    ("min", m, e); else None. The same program for every value: with the strict comparison
    a NaN `e` leaves `m`, a NaN `m` stays, as builtin `max(m, e)` does (`>=` would differ
    on the sign of a zero: not taken)."""
    if orelse or len(body) != 1 or not isinstance(cond, Compare) or cond.op not in ("<", ">"):
        return None
    st = body[0]
    if not isinstance(st, Assign) or st.aug or st.value.ty is not None:
        return None
    a, b = cond.a, cond.b
    for new, old, bigger in ((a, b, cond.op == ">"), (b, a, cond.op == "<")):
        if isinstance(old, Ref) and old.name == st.name and same_expr(new, st.value):
            return ("max" if bigger else "min"), st.name, st.value
    return None

