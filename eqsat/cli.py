"""The `eqsat` command (also `python -m eqsat`).

  eqsat optimize FILE.py[:function] [--shapes M=512,N=64] [--view plan.html] ...
  eqsat check-rules FILE|DIR ... [--programs FILE.py ...]
  eqsat view PLAN.pkl -o plan.html
  eqsat example

Exit status: 0 when everything asked for held; 1 when a check failed (the plan's result
differs from `reference`, a rule file is unsound, `--expect` did not hold, PTX could not
be compiled); 2 for bad input (a missing or broken file, malformed shapes, an unknown
function or option, an error eqsat reports about the program); 3 for an internal error
(a bug in eqsat: `--traceback` shows where).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib
import importlib.util
import io
import os
import pickle
import re
import sys
import threading
import time
import traceback

import numpy as np

from .args import MAX_SIZE, random_args

MAX_CHECK_ELEMENTS = 2**28  # inputs up to 1 GiB of f32 are made and run by the check
RECIPE = "eqsat-plan-recipe"


class CliError(Exception):
    """Bad input: printed as one line on stderr, exit status 2."""


def _first_line(text: str) -> str:
    lines = [ln for ln in str(text).splitlines() if ln.strip()]
    return lines[0].strip() if lines else ""


# ------------------------------------------------------------------ program files
def split_target(text: str) -> tuple[str, str | None]:
    """`FILE.py:function` -> (FILE.py, function); a path that exists as given is a path."""
    if ":" in text and not os.path.exists(text):
        head, tail = text.rsplit(":", 1)
        if tail.isidentifier() and head:
            return head, tail
    return text, None


def _seed(text: str) -> int:
    """`--seed`: a whole number numpy can seed with (0 or more)."""
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number, 0 or more, got {text!r}")
    return v


def _tolerance(text: str) -> float:
    """`--tolerance`: a relative error, a positive number."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return v


def _check_file(path: str, what: str = "program file") -> None:
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file")
    if os.path.isdir(path):
        raise CliError(f"{path} is a directory, not a {what}")
    if not os.access(path, os.R_OK):
        raise CliError(f"{path}: cannot read it (permission denied)")


_LOADED = [0]


def load_module(path: str, what: str = "program file"):
    """Import a user's file as a fresh module; any failure is a CliError naming file and line."""
    from .errors import EqsatError

    _check_file(path, what)
    _LOADED[0] += 1
    name = f"eqsat_cli_{re.sub(r'[^0-9A-Za-z_]', '_', os.path.splitext(os.path.basename(path))[0])}_{_LOADED[0]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"{path}: cannot import it as Python (is it a .py file?)")
    mod = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)  # its own imports of files beside it
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        file = path if not e.filename or os.path.abspath(e.filename) == os.path.abspath(path) else e.filename
        where = f"{file}:{e.lineno}" if e.lineno else file
        raise CliError(f"{where}: syntax error: {e.msg}") from None
    except EqsatError as e:  # names file:line:col itself
        raise CliError(_first_line(str(e))) from None
    except (Exception, SystemExit) as e:
        line = None
        for fr, lineno in traceback.walk_tb(e.__traceback__):
            if os.path.abspath(fr.f_code.co_filename) == os.path.abspath(path):
                line = lineno  # the deepest line of this file
        where = f"{path}:{line}" if line else path
        raise CliError(f"{where}: importing it raised {type(e).__name__}: {_first_line(str(e))}") from None
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
    return mod


def programs_of(mod, path: str) -> dict:
    """{name: Program} defined in the module (programs imported from elsewhere left out)."""
    from .ir import Program

    out: dict = {}
    seen: set = set()
    for var, v in vars(mod).items():
        if isinstance(v, Program) and id(v) not in seen:
            seen.add(id(v))
            out[v.name if v.name not in out else var] = v
    own = {k: p for k, p in out.items()
           if getattr(p, "file", None) and os.path.exists(p.file) and os.path.samefile(p.file, path)}
    return own or out


def pick_program(path: str, function: str | None):
    """(module, program) of `FILE.py[:function]`."""
    mod = load_module(path)
    progs = programs_of(mod, path)
    if not progs:
        raise CliError(f"{path}: no @eqsat.program in it")
    if function is not None:
        from .ir import Program

        prog = progs.get(function)
        if prog is None and isinstance(getattr(mod, function, None), Program):
            prog = getattr(mod, function)
        if prog is None:
            raise CliError(f"{path}: no program named {function!r}; its programs: {', '.join(progs)}")
        return mod, prog
    if len(progs) > 1:
        names = ", ".join(progs)
        raise CliError(f"{path} has {len(progs)} programs ({names}): name one, as {path}:{next(iter(progs))}")
    return mod, next(iter(progs.values()))


# ------------------------------------------------------------------ shapes
def parse_shapes(items: list) -> dict:
    """`["M=512,N=64", "K=32"]` -> {"M": 512, "N": 64, "K": 32}; malformed text is a CliError."""
    out: dict = {}
    for item in items:
        parts = item.split(",")
        for part in parts:
            p = part.strip()
            if not p:
                raise CliError(f"shapes {item!r}: an empty entry; write NAME=SIZE entries separated by commas, "
                               f"as M=512,N=64")
            if "=" not in p:
                raise CliError(f"shapes {item!r}: {p!r} has no size; write NAME=SIZE, as {p}=64")
            name, _, size = (s.strip() for s in p.partition("="))
            if not name.isidentifier():
                raise CliError(f"shapes {item!r}: {name!r} is not a dimension name")
            try:
                n = int(size)
            except ValueError:
                raise CliError(f"shapes {item!r}: the size of {name}, {size!r}, is not an integer") from None
            if abs(n) > MAX_SIZE:
                raise CliError(f"shapes {item!r}: {name}={n} is too large (sizes stop at 2**62)")
            if name in out and out[name] != n:
                raise CliError(f"shapes: {name} given twice ({out[name]} and {n})")
            out[name] = n
    return out


def shapes_for(prog, mod, given: dict) -> dict:
    """The file's SHAPES, updated by the sizes given on the command line."""
    base = getattr(mod, "SHAPES", None)
    base = dict(base) if isinstance(base, dict) else {}
    known = set(prog.dims) | {p.name for p in prog.params if p.dtype is int}
    unknown = [k for k in given if k not in known]
    if unknown:
        raise CliError(f"{prog.name} has no dimension {', '.join(unknown)}; its dimensions: "
                       f"{', '.join(sorted(known)) or '(none)'}")
    base.update(given)
    missing = [d for d in prog.dims if d not in base]
    if missing:
        raise CliError(f"no size for {', '.join(missing)} of {prog.name}: give --shapes "
                       f"{','.join(f'{d}=64' for d in missing)} (or a SHAPES dict in the file)")
    return base


# ------------------------------------------------------------------ output files
def check_writable(path: str, what: str) -> str:
    """Fail before the work if `path` cannot be written; makes its folder (the command line
    writes `--view out/plan.html` into a new `out/`; `plan.view` in Python does not make
    folders, as `open` does not)."""
    path = os.fspath(path)
    if not path:
        raise CliError(f"{what}: an empty file name")
    if os.path.isdir(path):
        raise CliError(f"{what} {path} is a directory")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise CliError(f"cannot write {what} {path}: a part of its folder is a file, not a folder") from None
    except OSError as e:
        raise CliError(f"cannot write {what} {path}: {e.strerror or e}") from None
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK) or (
            os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CliError(f"cannot write {what} {path}: permission denied")
    return path


# ------------------------------------------------------------------ progress
@contextlib.contextmanager
def progress(text: str, delay: float = 1.0):
    """A spinner with the elapsed time on stderr, once the work has run `delay` seconds, and
    only when stderr is a terminal (nothing at all is written otherwise)."""
    stream = sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()) or os.environ.get("EQSAT_NO_PROGRESS"):
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn
    from rich.text import Text

    t0 = time.perf_counter()

    class Elapsed(ProgressColumn):
        def render(self, task):
            return Text(f"{time.perf_counter() - t0:5.1f} s", style="cyan")

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), Elapsed(),
                   console=Console(file=stream), transient=True)
    lock = threading.Lock()
    state = {"started": False, "done": False}

    def start():
        with lock:
            if not state["done"]:
                bar.add_task(text)
                bar.start()
                state["started"] = True

    timer = threading.Timer(delay, start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["started"]:
                bar.stop()


# ------------------------------------------------------------------ optimize
def _rel_err(got, want) -> float:
    got_t, want_t = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    if not isinstance(got_t, tuple) or len(got_t) != len(want_t):
        return float("inf")
    worst = 0.0
    for g, w in zip(got_t, want_t):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape:
            return float("inf")
        finite = np.isfinite(w)
        if not (np.isfinite(g) == finite).all():
            return float("inf")
        d = float(np.linalg.norm(g[finite] - w[finite])) / max(float(np.linalg.norm(w[finite])), 1e-30)
        worst = max(worst, d)
    return worst


def check_run(plan, prog, mod, dims, backend: str, seed: int, tol: float) -> bool:
    """Run the plan on random inputs and compare with reference (and the file's `truth`)."""
    import eqsat

    elements = sum(int(np.prod([dims[d] if isinstance(d, str) else d for d in p.shape], dtype=object))
                   for p in prog.params if p.shape is not None and p.dtype is not int)
    if elements > MAX_CHECK_ELEMENTS:
        print(f"\nnot run: its inputs would hold {elements:,} elements (at most {MAX_CHECK_ELEMENTS:,} are run; "
              f"check at smaller --shapes, or pass --no-check)")
        return True
    args = random_args(prog, dims, seed)
    try:
        with progress(f"running the plan ({backend}) and the program as written"):
            got = plan.run(*args, backend=backend)
            want = eqsat.reference(prog, *args, shapes=dims)  # (a dim only the result names)
    except Exception as e:  # the backend cannot run here, or failed: the check did not pass
        print(f"\nran on {backend}: FAILED: {type(e).__name__}: {_first_line(str(e))}")
        return False
    err = _rel_err(got, want)
    ok = err <= tol
    print(f"\nran on {backend} (random inputs, seed {seed}): relative error against reference {err:.2e}: "
          f"{'OK' if ok else f'MISMATCH (tolerance {tol:g})'}")
    truth = getattr(mod, "truth", None)
    if callable(truth):
        try:
            terr = _rel_err(got, truth(*args))
        except Exception as e:
            print(f"the file's truth() failed: {type(e).__name__}: {_first_line(str(e))}")
            return False
        print(f"against the file's truth(): {terr:.2e}")
        ok = ok and terr <= tol
    return ok


def _arch(target: str) -> int:
    return 80 if target == "a100" else 90


def emit(plan, what: str) -> bool:
    if what == "triton":
        print("\n# ---- Triton kernels ----")
        print(plan.triton_source())
        return True
    import warnings

    kernels = [k for k in plan.kernels if k.kind != "loop"]
    if not kernels:
        print("\n(no kernel to compile to PTX: every kernel is a loop nest kept as written)")
        return True
    arch = _arch(plan.target)
    try:
        from eqsat.backends import triton_backend

        texts = []
        with warnings.catch_warnings(), progress("compiling PTX"):
            warnings.simplefilter("ignore")
            for i, k in enumerate(kernels):
                texts.append((k.name, triton_backend.ptx(plan, i, arch=arch)))
    except Exception as e:
        print(f"eqsat: cannot compile PTX here: {type(e).__name__}: {_first_line(str(e))}", file=sys.stderr)
        return False
    for name, text in texts:
        print(f"\n// ---- {name}: PTX for sm_{arch} ----")
        print(text)
    return True


def expect(plan, pattern: str) -> bool:
    why_not = getattr(plan, "why_not", None)
    if why_not is None:
        raise CliError("--expect needs Plan.why_not, which this version of eqsat does not have")
    result = why_not(pattern)
    print()
    print(str(result))
    return bool(getattr(result, "chosen", False))


def _rules_arg(text: str | None):
    if text is None:
        return None
    from .rules import ASSUMING, FAMILIES

    known = FAMILIES + ASSUMING  # as optimize(rules=None): the assuming ones in a search of their own
    out: list = []
    for r in (x.strip() for x in text.split(",")):
        if not r:
            continue
        if r in ("all", "default"):
            out += [f for f in known if f not in out]
        elif r in known:
            out.append(r)
        else:
            if not os.path.exists(r):
                raise CliError(f"--rules: {r!r} is neither a rule family ({', '.join(known)}) nor a file")
            if os.path.isdir(r):
                raise CliError(f"--rules: {r} is a directory; name its rule files")
            out.append(os.path.abspath(r))
    if not out:  # (`--rules ""` ran with no rules at all, saying nothing)
        raise CliError(f"--rules {text!r} names no rule family or file (families: {', '.join(known)}, or 'all')")
    return out


def _source_hash(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def save_recipe(path: str, file: str, prog, shapes: dict, target: str, rules, extract: str) -> None:
    recipe = {"format": RECIPE, "version": 1, "file": os.path.abspath(file), "function": prog.fn.__name__,
              "program": prog.name, "shapes": dict(shapes), "target": target,
              "rules": None if rules is None else list(rules), "extract": extract,
              "sha256": _source_hash(file)}
    try:
        with open(path, "wb") as f:
            pickle.dump(recipe, f)
    except OSError as e:
        raise CliError(f"cannot write --save {path}: {e.strerror or e}") from None


def do_optimize(a) -> int:
    import eqsat

    path, function = split_target(a.file)
    given = parse_shapes((a.shapes or []) + (a.shape or []))
    for p, what in ((a.view, "--view page"), (a.save, "--save file")):
        if p is not None:  # (an empty name is refused, not taken for "none": it wrote nothing, status 0)
            check_writable(p, what)
    rules = _rules_arg(a.rules)
    if a.expect is not None:  # (read before optimizing: a malformed pattern is bad input, said at once)
        from .whynot import parse

        try:
            parse(a.expect)
        except eqsat.ArgumentError as e:
            raise CliError(f"--expect: {e}") from None
    mod, prog = pick_program(path, function)
    dims = shapes_for(prog, mod, given)
    with progress(f"optimizing {prog.name}"):
        plan = eqsat.optimize(prog, dims, target=a.target, rules=rules, extract=a.extract)
    print(plan)
    ok = True
    if not a.no_check:
        tol = a.tolerance if a.tolerance is not None else (1e-4 if a.backend == "numpy" else 5e-3)
        ok = check_run(plan, prog, mod, dims, a.backend, a.seed, tol)
    if a.view:
        try:
            print(f"viewer page: {plan.view(a.view)}")
        except OSError as e:
            raise CliError(f"cannot write --view page {a.view}: {e.strerror or e}") from None
    if a.save:
        save_recipe(a.save, path, prog, dims, a.target, rules, a.extract)
        print(f"saved: {a.save} (how to re-create this plan; `eqsat view {a.save} -o plan.html` re-optimizes it)")
    if a.emit:
        ok = emit(plan, a.emit) and ok
    if a.expect is not None:
        ok = expect(plan, a.expect) and ok
    return 0 if ok else 1


# ------------------------------------------------------------------ view
class _Plain(pickle.Unpickler):
    """Unpickles plain data only (a recipe is a dict of strings and numbers): no code runs."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: not a recipe saved by eqsat")


def load_recipe(path: str) -> dict:
    _check_file(path, "saved plan")
    try:
        with open(path, "rb") as f:
            recipe = _Plain(f).load()
    except Exception as e:
        raise CliError(f"{path}: not a plan saved by `eqsat optimize --save` ({type(e).__name__}: "
                       f"{_first_line(str(e))})") from None
    if not isinstance(recipe, dict) or recipe.get("format") != RECIPE:
        raise CliError(f"{path}: not a plan saved by `eqsat optimize --save`")
    return recipe


def do_view(a) -> int:
    import eqsat

    recipe = load_recipe(a.plan)
    out = check_writable(a.output, "page")
    file = recipe["file"]
    if not os.path.exists(file):
        raise CliError(f"{a.plan}: its program file {file} no longer exists; run `eqsat optimize` again")
    if _source_hash(file) != recipe.get("sha256"):
        print(f"eqsat: warning: {file} changed since the plan was saved; re-optimizing it as it is now",
              file=sys.stderr)
    mod, prog = pick_program(file, recipe["function"])
    with progress(f"re-optimizing {prog.name}"):
        plan = eqsat.optimize(prog, recipe["shapes"], target=recipe["target"], rules=recipe["rules"],
                              extract=recipe.get("extract", "auto"))
    try:
        written = plan.view(out)
    except OSError as e:
        raise CliError(f"cannot write page {out}: {e.strerror or e}") from None
    print(f"viewer page: {written} ({prog.name}, {len(plan.kernels)} kernels, modeled {plan.cost * 1e6:.3f} us)")
    return 0


# ------------------------------------------------------------------ check-rules
def _defines_ruleset(path: str) -> bool:
    """Whether the file binds `ruleset` at top level (read, not run)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, UnicodeDecodeError, OSError):
        return True  # let loading it say what is wrong
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == "ruleset":
            return True
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        if any(isinstance(t, ast.Name) and t.id == "ruleset" for t in targets):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (al.asname or al.name) == "ruleset" for al in node.names):
            return True
    return False


def _shipped(path: str):
    """(module name, module) when `path` is one of eqsat's own rule modules, else None."""
    import eqsat.rules as shipped

    folder = os.path.dirname(os.path.abspath(shipped.__file__))
    stem = os.path.splitext(os.path.basename(path))[0]
    candidate = os.path.join(folder, f"{stem}.py")
    if not stem.isidentifier() or not os.path.exists(candidate):
        return None
    # the installed module itself, or a copy of it (the repository's rules/ beside an install)
    if os.path.samefile(candidate, path) or _source_hash(candidate) == _source_hash(path):
        return stem, importlib.import_module(f"eqsat.rules.{stem}")
    return None


def rule_sources(paths: list) -> list:
    """[(path, explicit)] of the rule files named or inside the folders named."""
    out = []
    for p in paths:
        if not os.path.exists(p):
            raise CliError(f"{p}: no such file or directory")
        if os.path.isdir(p):
            files = sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".py"))
            found = [f for f in files if _defines_ruleset(f)]
            if not found:
                raise CliError(f"{p}: no rule file in it (a .py file defining `ruleset`)")
            out += [(f, False) for f in found]
        else:
            _check_file(p, "rule file")
            if not _defines_ruleset(p):
                raise CliError(f"{p}: a rule file must define `ruleset` (an egglog @ruleset)")
            out.append((p, True))
    return out


def _measure_programs(specs: list) -> list:
    out = []
    for spec in specs:
        path, function = split_target(spec)
        mod = load_module(path)
        progs = programs_of(mod, path)
        if function is not None:
            _, prog = pick_program(path, function)
            progs = {function: prog}
        if not progs:
            raise CliError(f"{path}: no @eqsat.program in it")
        for prog in progs.values():
            out.append((prog, shapes_for(prog, mod, {})))
    return out


def _describe(rep, verbose: bool, n_probes: int) -> list:
    if not rep.sound:
        lines = [f"{rep.label}: UNSOUND: with it, {'probe ' if rep.broken else ''}program {rep.broken!r} "
                 f"{rep.error if rep.error.startswith('failed') else 'computes a different result: ' + rep.error}"]
        if verbose and rep.plan_text:
            lines += ["  the plan was:"] + [f"    {ln}" for ln in rep.plan_text.splitlines()]
        return lines
    on = f"{len(rep.stats)} program{'s' if len(rep.stats) != 1 else ''}" if rep.on == "programs" else "the probes"
    lines = [f"{rep.label}: sound on {n_probes} probe programs ({rep.kind})"]
    matched = {k: v for k, v in rep.rules.items() if v}
    top = sorted(matched.items(), key=lambda kv: -kv[1])
    shown = top if verbose else top[:5]
    total = len(rep.rules)
    tail = ":" if shown else " (a rule no probe matches is unchecked)" if rep.on == "probes" else ""
    lines.append(f"  {len(matched)} of {total} rules matched on {on}{tail}")
    for name, n in shown:
        lines.append(f"    {n:8d}  {name}")
    if len(top) > len(shown):
        lines.append(f"    ... {len(top) - len(shown)} more (-v lists them)")
    never = [k for k, v in rep.rules.items() if not v]
    if never and (verbose or total - len(matched) <= 5):
        what = "no probe matches them: unchecked" if rep.on == "probes" else "on these programs"
        lines.append(f"  never matched ({what}): {'; '.join(never)}")
    grown = [s for s in rep.stats if s.growth is not None]
    if grown:
        worst = max(grown, key=lambda s: s.growth)
        w_nodes = sum(s.with_.nodes for s in grown)
        wo_nodes = sum(s.without.nodes for s in grown)
        lines.append(f"  e-graph on {on}: {w_nodes} e-nodes with it, {wo_nodes} without; largest growth "
                     f"{worst.growth:.2f}x ({worst.program}: {worst.without.nodes} -> {worst.with_.nodes})")
    elif rep.stats:
        lines.append(f"  e-graph on {on}: {sum(s.with_.nodes for s in rep.stats)} e-nodes "
                     f"(support rules always run: no size without them)")
    if verbose:
        for s in rep.stats:
            wo = f", without {s.without.nodes} ({s.without.stop_reason})" if s.without else ""
            rounds = " ".join(str(r["nodes"]) for r in s.with_.rounds)
            lines.append(f"    {s.program}: {s.with_.nodes} e-nodes ({s.with_.stop_reason}){wo}; "
                         f"the engine's count (facts included) after each call: {rounds or '-'}")
    lines += [f"  warning: {w}" for w in rep.warnings]
    return lines


def do_check_rules(a) -> int:
    from egglog import Ruleset

    from . import api, rulecheck
    from .errors import EqsatError
    from .rules import FAMILIES

    sources = rule_sources(a.sources)
    programs = _measure_programs(a.programs or [])
    cache: dict = {}
    n_probes = len(rulecheck._probes())
    unsound = broken = 0
    for path, explicit in sources:
        shipped = _shipped(path)
        try:
            if shipped is not None:
                stem, mod = shipped
                if not isinstance(getattr(mod, "ruleset", None), Ruleset):
                    continue
                if stem in FAMILIES:
                    kind, family = f"family {stem}", stem
                    with_rules, without = list(FAMILIES), [f for f in FAMILIES if f != stem]
                elif stem in ("analysis", "sanity"):
                    kind, family = "support rules, always run", stem
                    with_rules, without = list(FAMILIES), None
                else:
                    kind, family = f"eqsat.rules.{stem}", stem
                    with_rules, without = list(FAMILIES) + [mod], list(FAMILIES)
                ruleset = mod.ruleset
            else:
                kind = "added to every family"
                load_module(path, "rule file")  # its errors with file and line
                (family, ruleset, _), = api.resolve_rules([path])
                with_rules, without = list(FAMILIES) + [os.path.abspath(path)], list(FAMILIES)
            with progress(f"checking {path}"):
                rep = rulecheck.examine(path, family, with_rules, without, programs=programs, ruleset=ruleset,
                                        cache=cache)
        except (EqsatError, CliError) as e:
            if explicit and len(sources) == 1:
                raise CliError(_first_line(str(e))) from None
            print(f"{path}: cannot check it: {_first_line(str(e))}")
            broken += 1
            continue
        rep.kind = kind
        print("\n".join(_describe(rep, a.verbose, n_probes)))
        unsound += not rep.sound
    n = len(sources)
    print(f"\n{n} rule file{'s' if n != 1 else ''}: {n - unsound - broken} sound on the probes"
          + (f", {unsound} unsound" if unsound else "") + (f", {broken} could not be loaded" if broken else "")
          + " (a probe can show a rule unsound, not prove it sound)")
    return 2 if broken else 1 if unsound else 0


# ------------------------------------------------------------------ example
def do_example(a) -> int:
    import eqsat
    from .examples import linear_gelu_residual as mod

    check_writable(a.view, "--view page")
    prog = mod.linear_gelu_residual
    with progress(f"optimizing {prog.name}"):
        plan = eqsat.optimize(prog, mod.SHAPES, target=a.target)
    print(plan)
    ok = check_run(plan, prog, mod, mod.SHAPES, "numpy", 0, 1e-4)
    print(f"viewer page: {plan.view(a.view)}")
    return 0 if ok else 1


# ------------------------------------------------------------------ arguments
class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors: two lines, status 2
        self.print_usage(sys.stderr)
        print(f"eqsat: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def parser() -> argparse.ArgumentParser:
    from .cost import TARGETS

    ap = _Parser(prog="eqsat", usage="eqsat {optimize,check-rules,view,example} ...  (eqsat -h: what each does)",
                 description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traceback", action="store_true", help="show the traceback of an internal error")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=_Parser)

    op = sub.add_parser(
        "optimize", usage="eqsat optimize FILE.py[:function] [--shapes M=512,N=64] [options]  (-h: all of them)",
        help="optimize a program file, print the plan, run it and check it against reference",
        description="Optimize a program, print the plan, run it on random inputs and compare the result with "
                    "eqsat.reference (prints OK or the error; exit status 1 on a mismatch).")
    op.add_argument("file", metavar="FILE.py[:function]",
                    help="the program file; name the program when the file has several")
    op.add_argument("--shapes", action="append", metavar="M=512,N=64",
                    help="sizes of the dimensions; the file's SHAPES dict gives the rest")
    op.add_argument("--shape", action="append", metavar="M=512", help="one size (repeatable)")
    op.add_argument("--target", default="h100", choices=sorted(TARGETS), help="the cost model's target (h100)")
    op.add_argument("--rules", metavar="LIST",
                    help="comma-separated families and rule files (default: every family; `all` names them, "
                         "e.g. all,my_rules.py)")
    op.add_argument("--extract", default="auto", choices=["auto", "greedy", "ilp"], help="extraction (auto)")
    op.add_argument("--backend", default="numpy", choices=["numpy", "triton"],
                    help="the backend that runs the check (numpy; triton runs Triton's interpreter without a GPU)")
    op.add_argument("--no-check", action="store_true",
                    help="do not run the plan (reference runs the program as plain Python: slow for large loops)")
    op.add_argument("--seed", type=_seed, default=0, help="seed of the random inputs (0)")
    op.add_argument("--tolerance", type=_tolerance, help="relative error allowed (1e-4 numpy, 5e-3 triton)")
    op.add_argument("--view", metavar="OUT.html", help="write the viewer page")
    op.add_argument("--emit", choices=["triton", "ptx"],
                    help="print the Triton kernels, or their PTX (sm_90; sm_80 for --target a100)")
    op.add_argument("--expect", metavar="PATTERN",
                    help="print plan.why_not(PATTERN); exit status 1 unless a kernel of the plan matches it")
    op.add_argument("--save", metavar="PLAN.pkl",
                    help="save how to re-create this plan: a Plan holds compiled code and does not pickle, so the "
                         "file's path, the program's name, the shapes, target, rules and extraction are saved; "
                         "`eqsat view PLAN.pkl` optimizes again from them")

    cr = sub.add_parser(
        "check-rules", usage="eqsat check-rules FILE|DIR ... [--programs FILE.py ...] [-v]",
        help="check rule files for soundness and measure their matches and e-graph growth",
        description="For each rule file (a folder: every .py file in it defining `ruleset`), optimize the probe "
                    "programs with its rules added to every family, run them and compare with reference; then "
                    "report each rule's matches and the e-graph's growth with the file against without it, on the "
                    "probes or on --programs, and warn about rules that blow up. Exit status 1 if a file is "
                    "unsound. eqsat's own families (eqsat/rules, the repository's rules/) are checked as the "
                    "families they are.")
    cr.add_argument("sources", nargs="+", metavar="FILE|DIR")
    cr.add_argument("--programs", nargs="+", metavar="FILE.py[:function]",
                    help="measure on these programs (at their files' SHAPES) instead of the probes; they are run "
                         "and compared with reference too")
    cr.add_argument("-v", "--verbose", action="store_true", help="every rule, every program, and a broken plan")

    vw = sub.add_parser("view", usage="eqsat view PLAN.pkl -o OUT.html",
                        help="write the viewer page of a plan saved by `optimize --save`",
                        description="Re-create a plan saved by `eqsat optimize --save` (the program file is "
                                    "optimized again, with the saved shapes, target, rules and extraction) and "
                                    "write its viewer page.")
    vw.add_argument("plan", metavar="PLAN.pkl")
    vw.add_argument("-o", "--output", required=True, metavar="OUT.html")

    ex = sub.add_parser("example", help="optimize, run and view the bundled example")
    ex.add_argument("--view", default="out/plan.html")
    ex.add_argument("--target", default="h100", choices=sorted(TARGETS))
    return ap


COMMANDS = {"optimize": do_optimize, "check-rules": do_check_rules, "view": do_view, "example": do_example}


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    from .errors import EqsatError

    try:
        return COMMANDS[a.cmd](a)
    except CliError as e:
        print(f"eqsat: error: {e}", file=sys.stderr)
        return 2
    except EqsatError as e:  # names file:line itself; the first line says it
        lines = str(e).splitlines()
        more = " (eqsat check-rules FILE -v shows the plan)" if type(e).__name__ == "UnsoundRule" else ""
        print(f"eqsat: error: {_first_line(str(e))}{more if len(lines) > 1 else ''}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("eqsat: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        with contextlib.suppress(Exception):
            sys.stdout = io.StringIO()
        return 1
    except Exception as e:
        if a.traceback or os.environ.get("EQSAT_TRACEBACK"):
            raise
        print(f"eqsat: internal error: {type(e).__name__}: {_first_line(str(e))} (a bug in eqsat; --traceback "
              f"shows where)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
