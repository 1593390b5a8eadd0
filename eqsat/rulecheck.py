"""Checks a user's rule file before it is trusted: differential probes.

A rule written by hand can be unsound (`relu(x) -> x`, `x * y -> x`, a transpose
rewritten to its argument because the tensor is square), and egglog accepts it: the plan
is then silently wrong. Before `optimize()` uses a rule file (or a module or Ruleset a
user passes), it optimizes a handful of small probe programs with the file's rules added
to the built-in families, runs each plan and compares it with `reference` on random
inputs (values of both signs, square and non-square tensors, loops and library calls).
A difference raises `UnsoundRule`, naming the rule source and the probe it broke. Each
source is checked once per process (by path and modification time); `EQSAT_CHECK_RULES=0`
turns the check off.

A probe can only show a rule unsound, never prove it sound: a rule whose left side no
probe contains passes unchecked. The sanity rules (`rules/sanity.py`) remain the second
line: a merge of two different constants, inputs or shapes stops saturation with an
error naming the rule sources in use.

`examine()` is the longer form `eqsat check-rules` prints: soundness on the probes, then
each rule's match count and the e-graph's growth with the source against without it, on
the probes or on programs the caller gives, with warnings for rules that blow up.
"""
from __future__ import annotations

import functools
import importlib.util
import math
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .errors import ArgumentError, EqsatError, one_line

PROBES = '''
from eqsat import *

@program
def elementwise(x: f32["M", "N"], y: f32["M", "N"], s: f32) -> f32["M", "N"]:
    return relu(x) * y + sigmoid(x * s) - tanh(y) / 2.0 + exp(-abs(x)) * (x - y)

@program
def square(a: f32["N", "N"], b: f32["N", "N"]) -> f32["N", "N"]:
    return a.T @ b + relu(a) - transpose(b) * 0.5

@program
def linear(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    return gelu(x @ w + b)

@program
def loop_matmul(a: f32["M", "K"], b: f32["K", "N"], bias: f32["N"]) -> f32["M", "N"]:
    c = empty((M, N))
    for i in range(M):
        for j in range(N):
            s = bias[j]
            for k in range(K):
                s += relu(a[i, k]) * (0.5 * b[k, j])
            c[i, j] = relu(s) - 0.25 * s
    return c

@program
def reductions(a: f32["M", "K"]) -> f32["M"]:
    r = empty((M,))
    for i in range(M):
        s = 0.0
        m = -1000.0
        for k in range(K):
            s += a[i, k] * a[i, k]
            m = max(m, a[i, k])
        r[i] = s - m
    return r

@program
def transposed_loops(a: f32["K", "M"], b: f32["N", "K"]) -> f32["N", "M"]:
    c = zeros((N, M))
    for j in range(N):
        for k in range(K):
            for i in range(M):
                c[j, i] += b[j, k] * a[k, i]
    return c

@program
def batched(a: f32["B", "M", "K"], w: f32["K", "N"]) -> f32["B", "M", "N"]:
    c = empty((B, M, N))
    for r in range(B):
        c[r] = sigmoid(a[r] @ w)
    return c

@program
def activations(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    h = x @ w + b
    y = h * sigmoid(h) + tanh(h) * h - sigmoid(h) * relu(-h)
    return y + (sigmoid(h) * h) / (1.0 + exp(h)) + relu(h) * sigmoid(-h)
'''

DIMS = {"M": 3, "N": 4, "K": 5, "B": 2}

_CHECKED: dict = {}  # source key -> None (sound on every probe) or the error


class UnsoundRule(EqsatError):
    """A user's rule made a probe program compute a different result."""


@functools.lru_cache(maxsize=1)
def _probes() -> tuple:
    """The probe programs, written to a file and loaded once per process."""
    from .ir import Program

    d = tempfile.mkdtemp(prefix="eqsat_probes_")
    path = os.path.join(d, "eqsat_rule_probes.py")
    with open(path, "w") as f:
        f.write(PROBES)
    spec = importlib.util.spec_from_file_location("eqsat_rule_probes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return tuple(v for v in vars(mod).values() if isinstance(v, Program))


def _key(source, label: str):
    path = getattr(source, "__file__", None) or (source if isinstance(source, (str, os.PathLike)) else None)
    if path is not None and os.path.isfile(path):
        return (os.path.abspath(path), os.path.getmtime(path))
    return ("object", id(source), label)


# each probe program's optimize() with a user's rules runs at most this long
PROBE_SECONDS = 2.0


def check(user_sources: list, builtin: list, seconds: float = math.inf) -> None:
    """Raise UnsoundRule if adding any of `user_sources` ((label, ruleset source) pairs, as
    `optimize(rules=...)` accepts them) to the `builtin` family names breaks a probe.
    `seconds`: what the whole check may take (a share of the caller's `Limits.seconds`):
    each probe's saturation gets its part (a plan stopped early is still checked)."""
    if os.environ.get("EQSAT_CHECK_RULES", "1") == "0":
        return
    from .api import optimize, resolve_rules
    from .backends.loops import interpreted
    from .limits import Limits
    from .reference import reference

    for label, source in user_sources:
        key = _key(source, label)
        if key in _CHECKED:
            if _CHECKED[key] is not None:
                raise _CHECKED[key]
            continue
        resolve_rules([source])  # (a file that does not load is bad input, said as such: ArgumentError)
        err = None
        matched: dict = {}
        rng = np.random.default_rng(0)
        probes = _probes()
        each = min(PROBE_SECONDS, seconds / (len(probes) * len(user_sources)))
        for prog in probes:
            args = _program_args(prog, DIMS, rng)
            want = np.asarray(reference(prog, *args), dtype=np.float64)
            try:
                plan = optimize(prog, DIMS, rules=list(builtin) + [source], _checked=True,
                                limits=Limits(seconds=each, nodes=20_000))
                with interpreted():  # (tiny sizes: compiling its kept nests took seconds on a fresh cache)
                    got = np.asarray(plan.run(*args), dtype=np.float64)
            except EqsatError as e:
                err = UnsoundRule(f"rule source {label}: probe program {prog.name!r} failed with it: {e}")
                break
            except Exception as e:  # noqa: BLE001 - egglog refusing the rules (an ungrounded variable, say)
                # (bad input, not an unsound rule: the file is not a rule set egglog can run)
                err = _unusable(f"rule source {label}", e)
                break
            for name, n in plan.report.rule_matches.items():
                matched[name] = matched.get(name, 0) + n
            scale = max(float(np.linalg.norm(want)), 1e-6)
            if got.shape != want.shape or not np.isfinite(got).all() or float(np.linalg.norm(got - want)) / scale > 1e-4:
                err = UnsoundRule(
                    f"rule source {label} is unsound: with it, probe program {prog.name!r} computes a different "
                    f"result than the program (relative error {float(np.linalg.norm(got - want)) / scale:.3g}); "
                    f"the plan was:\n{plan}")
                break
        _CHECKED[key] = err
        if err is not None:
            raise err
        _warn_unchecked(label, source, matched)


def _warn_unchecked(label, source, matched: dict) -> None:
    """Warn (once per source) about its rules that no probe matched: those are trusted
    unchecked (`sqrt(a * a) -> a` is unsound for a < 0, and no probe has a sqrt of a square)."""
    import warnings

    from .api import resolve_rules

    try:
        (family, ruleset, _), = resolve_rules([source])
        never = [n for n in rule_names(family, ruleset) if not matched.get(n)]
    except Exception:  # noqa: BLE001 - naming its rules is a courtesy; the check itself passed
        return
    if never:
        shown = "; ".join(never[:5]) + (f"; and {len(never) - 5} more" if len(never) > 5 else "")
        warnings.warn(f"rule source {label}: {len(never)} of its rules matched no probe program, so they are "
                      f"trusted unchecked ({shown}); `eqsat check-rules {label} --programs <your program file>` checks them "
                      f"on a program of yours", UnsoundRuleWarning, stacklevel=4)


class UnsoundRuleWarning(UserWarning):
    """Some rules of a user's rule source could not be checked (no probe matched them)."""


# ---------------------------------------------------------------------- examine (the CLI's check)
# a rule is flagged when, on one program, it matches more than MATCH_WARN_FACTOR times the
# e-graph's final size (and more than MATCH_WARN_MIN times), or when the e-graph with its
# source is more than GROWTH_WARN times the size without it, or when only with it a limit stops
# saturation
MATCH_WARN_FACTOR = 10
MATCH_WARN_MIN = 1_000
GROWTH_WARN = 5.0


_FAMILY_RUNS: dict = {}  # runs with built-in families only, kept for the process


@dataclass
class Run:
    """One program optimized with one list of rule sources: what `examine` reads of it."""

    program: str
    nodes: int = 0
    stop_reason: str = ""
    rule_matches: dict = field(default_factory=dict)
    rounds: list = field(default_factory=list)
    error: str | None = None  # the result differed from reference, or optimize/run failed
    plan_text: str = ""


@dataclass
class ProgramStats:
    """One program with the source (`with_`) and without it (`without`, None for support
    rules, which always run)."""

    program: str
    with_: Run
    without: Run | None

    @property
    def growth(self) -> float | None:
        if self.without is None or not self.without.nodes:
            return None
        return self.with_.nodes / self.without.nodes


@dataclass
class SourceReport:
    """What `examine` found for one rule source."""

    label: str
    family: str  # the prefix of its rules' names (`<family>.<n>: ...`)
    kind: str = ""  # what it is to the caller ("family matmul", "added to every family", ...)
    sound: bool = True
    broken: str | None = None  # the program it broke
    error: str | None = None  # one line: how it broke it
    plan_text: str = ""  # the plan that computed the wrong result
    rules: dict = field(default_factory=dict)  # each of its rules -> matches over `stats`
    stats: list = field(default_factory=list)  # ProgramStats per program measured
    on: str = "probes"  # "probes" or "programs": what `stats` were measured on
    warnings: list = field(default_factory=list)


def _mismatch(got, want) -> str | None:
    got_t, want_t = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    if not isinstance(got_t, tuple) or len(got_t) != len(want_t):
        return f"returned {len(got_t) if isinstance(got_t, tuple) else 1} outputs, the program {len(want_t)}"
    for i, (g, w) in enumerate(zip(got_t, want_t)):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        which = f"output {i}: " if len(want_t) > 1 else ""
        if g.shape != w.shape:
            return f"{which}shape {g.shape}, the program's {w.shape}"
        finite = np.isfinite(w)
        if not (np.isfinite(g) == finite).all() or not (g[~finite] == w[~finite]).all():
            return f"{which}non-finite values where the program has none (or the other way round)"
        scale = max(float(np.linalg.norm(w[finite])), 1e-6)
        err = float(np.linalg.norm(g[finite] - w[finite])) / scale
        if err > 1e-4:
            return f"{which}relative error {err:.3g} against the program"
    return None


def _program_args(prog, dims, rng):
    out = []
    for p in prog.params:
        if p.dtype is int:
            out.append(dims[p.name])
        elif p.shape is None:
            out.append(np.float32(rng.uniform(0.5, 1.5)))
        else:
            shape = tuple(dims[d] if isinstance(d, str) else d for d in p.shape)
            out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def _unusable(label: str | None, e: Exception) -> ArgumentError:
    """Bad input, not an unsound rule: egglog refused to build the rules (an ungrounded
    variable, a sort mismatch); `label` names their source where the caller knows it."""
    return ArgumentError(f"{label + ': ' if label else ''}egglog cannot use its rules: {type(e).__name__}: "
                         f"{one_line(e)}")


def _run(prog, dims, rules: list, limits, cache: dict | None) -> Run:
    """Optimize `prog` with `rules` (the check itself off), run it, compare with reference."""
    from .api import optimize
    from .reference import reference

    from .rules import FAMILIES

    key = (id(prog), tuple(sorted(dims.items())), tuple(str(r) for r in rules), limits)
    if all(isinstance(r, str) and r in FAMILIES for r in rules):
        cache = _FAMILY_RUNS  # built-in families only: the same on every call in this process
        if len(cache) > 256:
            cache.clear()
    if cache is not None and key in cache:
        return cache[key][1]
    out = Run(prog.name)
    try:
        try:
            plan = optimize(prog, dims, rules=list(rules), _checked=True, limits=limits)
        except Exception as e:  # noqa: BLE001 - egglog refusing to build the rules is bad input, not unsoundness
            if type(e).__name__ == "EggSmolError" and "panic" not in str(e).lower():
                raise _unusable(None, e) from None
            raise
        rep = plan.report
        out.nodes = getattr(plan, "egraph_nodes", None) or rep.nodes
        out.stop_reason, out.rule_matches, out.rounds = rep.stop_reason, dict(rep.rule_matches), list(rep.rounds)
        out.plan_text = str(plan)
        args = _program_args(prog, dims, np.random.default_rng(0))
        out.error = _mismatch(plan.run(*args), reference(prog, *args))
    except ArgumentError:  # (a rule file egglog cannot run is bad input: the caller says which)
        raise
    except EqsatError as e:
        out.error = f"failed: {(str(e).splitlines() or [''])[0]}"
    except Exception as e:  # a rule can build terms no backend runs: that breaks the probe too
        out.error = f"failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}"
    if cache is not None:
        cache[key] = (prog, out)  # the entry keeps the program alive, so its id stays its own
    return out


def rule_names(family: str, ruleset) -> list:
    """Every rule of `ruleset` by the name the match counts use (`<family>.<n>: ...`)."""
    from .extract import CONSTRUCTORS
    from .provenance import RuleTable

    return [info.name for info in RuleTable([(family, ruleset)], CONSTRUCTORS).info.values()]


def examine(label: str, family: str, with_rules: list, without_rules: list | None, *, programs=None,
            ruleset=None, cache: dict | None = None) -> SourceReport:
    """Check one rule source the long way and measure it.

    label:         how to name the source (its path)
    family:        the prefix of its rules' names in the match counts
    with_rules:    the `rules=` list with the source in it
    without_rules: the same without it (the growth's baseline), or None (support rules)
    programs:      [(program, dims)] to measure on instead of the probes (they are also
                   run and compared with `reference`, like the probes)
    ruleset:       the source's Ruleset, to list its rules that never matched

    Soundness is always checked on the probes, whatever `programs` is.
    """
    from .limits import Limits

    rep = SourceReport(label, family)
    probe_limits = Limits(seconds=2.0, nodes=20_000)
    probes = [(p, DIMS, probe_limits) for p in _probes()]
    measured = probes if not programs else [(p, d, Limits()) for p, d in programs]
    rep.on = "probes" if not programs else "programs"
    runs = {}
    for prog, dims, limits in probes + ([] if not programs else measured):
        try:
            run = runs[id(prog)] = _run(prog, dims, with_rules, limits, cache)
        except ArgumentError as e:  # (the rule file is not one egglog can run: an ungrounded variable, say)
            raise ArgumentError(f"{label}: {e}") from None
        if run.error is not None:
            rep.sound, rep.broken, rep.error, rep.plan_text = False, prog.name, run.error, run.plan_text
            return rep
    prefix = family + "."
    names = rule_names(family, ruleset) if ruleset is not None else []
    rep.rules = {n: 0 for n in names}
    for prog, dims, limits in measured:
        w = runs[id(prog)]
        wo = None if without_rules is None else _run(prog, dims, without_rules, limits, cache)
        st = ProgramStats(prog.name, w, wo)
        rep.stats.append(st)
        for name, n in w.rule_matches.items():
            if name.startswith(prefix):
                rep.rules[name] = rep.rules.get(name, 0) + n
                if n > MATCH_WARN_MIN and n > MATCH_WARN_FACTOR * max(w.nodes, 1):
                    rep.warnings.append(
                        f"{name} matched {n} times on {prog.name} (its e-graph: {w.nodes} e-nodes): it may blow "
                        f"up; consider staging it in a rule set of its own (its own file, passed only where needed)")
        g = st.growth
        if g is not None and g > GROWTH_WARN:
            rep.warnings.append(
                f"on {prog.name} the e-graph grew to {g:.1f}x its size without {label} ({wo.nodes} -> {w.nodes} "
                f"e-nodes); consider staging its rules in a rule set of their own")
        if wo is not None and w.stop_reason != "saturated" and wo.stop_reason == "saturated":
            rep.warnings.append(f"on {prog.name} saturation stopped at a limit only with {label}: {w.stop_reason}")
    return rep
