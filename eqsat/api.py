"""`optimize()`: a program in, a Plan out. Reads as the list of its phases."""
from __future__ import annotations

import copy
import dataclasses
import importlib
import importlib.util
import math
import os
import sys
import threading
import time

import numpy as np

from egglog import Ruleset

from . import alpha, assume, egraph, explain, relevance
from .args import by_position, check_dims, check_program
from .cost import ITEM, TARGETS, Model
from .errors import ArgumentError, EqsatError, one_line
from .extract import ExtractionCycle, Extractor, NoForm
from .limits import ANALYSIS_SHARE, Limits, give_back_memory, rare_full_collections
from .lower import lower
from .terms import allow_deep_recursion
from .plan import Kernel, describe, form_kernels, input_items, plan_costing
from .prefuse import prefuse
from .terms import show, walk

__all__ = ["optimize", "Plan", "Kernel", "Limits"]


# egglog-python keeps declarations, rule sets and schedules as process-wide state, and an
# e-graph must be created, used and dropped on one thread. Everything optimize() does with
# egglog runs under this lock, on the calling thread; lowering, extraction and Plan.run of
# different plans run in parallel outside it.
EGGLOG_LOCK = threading.RLock()
ILP_AUTO_NODES = 2000  # extract="auto" solves the exact program up to this many tensor e-nodes
# ... for at most this long (or an eighth of the time limit), keeping the best plan it has
# by then: where HiGHS cannot prove greedy's plan optimal (a 10-layer chain at 8x8, every
# kernel at the launch floor: 360 variables) it spent its whole 2 s for nothing
AUTO_ILP_SECONDS = 0.5
MIN_ILP_SECONDS = 0.02
ILP_IMPORT_SECONDS = 0.3


@rare_full_collections()  # (limits.py: why)
def optimize(prog, shapes: dict, *, target: str = "h100", rules=None, limits: Limits | None = None,
             extract: str = "auto", candidates: int = 1, _checked: bool = False,
             _keep_extractor: bool = False, _lowered=None, _assuming: bool = True) -> "Plan":
    """Find the cheapest equivalent form of `prog` at these sizes and return it as a Plan.

    rules:  None for every family in `eqsat.rules.FAMILIES`; otherwise a list of family
            names, paths of rule files, modules, or egglog Rulesets (`[]`: no rewriting).
    limits: bounds on the search (`Limits()`; `seconds` counts the whole call, see
            egraph._Budget); when one is hit the best form found so far is used and
            `plan.report.stop_reason` says which.
    extract: how the cheapest form is read off the e-graph. "greedy": DAG-aware, fast at
            any size, but blind to some sharing (three epilogues of one product may each
            recompute it). "ilp": exact over the kernels (scipy's HiGHS within
            `limits.seconds`). "auto" (default): greedy, then the exact program too when
            the e-graph has at most `ILP_AUTO_NODES` tensor e-nodes (a few ms there),
            within `AUTO_ILP_SECONDS`, an eighth of `limits.seconds` and what is left of it
            (none with less than `MIN_ILP_SECONDS` left).
            Whatever the method, every candidate (greedy's, the ILP's, the program as
            written) is priced by the one cost model and the cheapest is returned, so a
            plan is never rated costlier than the program as written; `plan.extraction`
            gives each candidate's price and which won.
    candidates: keep this many distinct plans (different kernels: fusion, layout, launches),
            cheapest first, as `plan.candidates` (`plan` itself first; see
            `eqsat/candidates.py`). `plan.compiled(backend)` then runs each once where a
            timing means something (numpy on this CPU; triton on a CUDA device) and keeps
            the fastest; `plan.tuning` gives the modeled and the measured rank of each.

    Families that hold only under an assumption checked at run time (`rules.ASSUMING`:
    "finite", on by default) never join the exact search: where the program has a site
    for one, a second search adds them, and its plan is returned when the model rates it
    cheaper with the check included; it then runs only on arguments that pass the check,
    and `plan.fallback`, the exact plan, on the others (`eqsat/assume.py`).
    """
    check_program(prog, "optimize()")
    prog = prog.current()  # module-level constants as they are now
    allow_deep_recursion()  # (terms of a long chain of layers are deep)
    if not isinstance(target, str) or target not in TARGETS:
        raise ArgumentError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    check_dims(prog, shapes)
    if rules is not None and not isinstance(rules, (str, os.PathLike, Ruleset, list, tuple)):
        try:  # (an iterator is read once here: the calls below each list the rules again)
            rules = list(rules)
        except TypeError:
            raise ArgumentError(f"rules must be None, a family name, a rule file's path, a module, an egglog "
                                f"Ruleset, or a list of those; got {type(rules).__name__}") from None
    if extract not in ("auto", "greedy", "ilp"):
        raise ArgumentError(f"extract must be 'auto', 'greedy' or 'ilp', got {extract!r}")
    if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
        raise ArgumentError(f"candidates must be a whole number of plans, at least 1, got {candidates!r}")
    # sizes as Python ints: a numpy integer would carry its own width into size arithmetic
    # (np.uint8(200) * 2 is 144)
    shapes = {k: int(v) if isinstance(v, np.integer) else v for k, v in shapes.items()}
    limits = Limits() if limits is None else limits
    if not isinstance(limits, Limits):
        raise ArgumentError(f"limits must be an eqsat.Limits, got {type(limits).__name__}")
    t0 = time.perf_counter()  # Limits.seconds counts from here: the rule check included
    phases: dict = {}  # seconds per phase of this call (bench/corpus_bench.py prints them)

    def lap(name, since):
        now = time.perf_counter()
        phases[name] = phases.get(name, 0.0) + now - since
        return now

    t = t0
    if not _checked:
        from . import rulecheck

        user = _user_sources(rules)
        if user:
            from .rules import FAMILIES

            rulecheck.check(user, list(FAMILIES), seconds=RULECHECK_SHARE * limits.seconds)
            t = lap("rule check", t0)
    from .rules import ASSUMING

    listed = _rule_list(rules)
    assuming = [r for r in (ASSUMING if rules is None else listed) if isinstance(r, str) and r in ASSUMING]
    if not _assuming:  # the second search itself: the assuming families run in it
        assuming = []
    elif assuming:
        rules = [r for r in listed if not (isinstance(r, str) and r in ASSUMING)]
    if _lowered is None:  # loop IR -> functional terms, nests lifted while the time limit allows
        timed = math.isfinite(limits.seconds)
        # (a thread's first call also prepares its e-graph after the lowering)
        finish = t0 + limits.seconds - (0.0 if egraph.prepared_here() else egraph.PREPARE_SECONDS)
        lowered = lower(prog, shapes, finish=finish if timed else None,
                        abandon=t0 + ANALYSIS_SHARE * limits.seconds if timed else None)
    else:
        lowered = _lowered
    t = lap("lower", t)
    egraph.check_not_forked()  # (before the lock: a fork copies it held by the thread that had it)
    with EGGLOG_LOCK:  # egglog's declarations are process state: one thread at a time in it
        t = lap("wait for egglog", t)
        families = resolve_rules(rules)                            # which rewrites may run
        # the inline family's sure work done first (eqsat/prefuse.py): elementwise
        # producers read once fused into their readers, so a chain is one computation
        start = prefuse(lowered) if any(n == "inline" for n, _, _ in families) else lowered
        opaque = _opaque_shapes(lowered)
        running = _matchable(families, start, opaque)              # rule sets that can match it
        support = _support(running)
        rewrites = [r for _, r, _ in running if r is not None]
        t = lap("lower", t)
        with egraph.session(rewrites, support, limits) as eg:     # this thread's prepared e-graph
            t = lap("prepared e-graph", t)
            egraph.build(start, opaque, eg)                          # every output a root
            t1 = t = lap("build", t)
            try:
                report = egraph.saturate(eg, rewrites, support, limits, _rule_table(families), start=t0)
            except Exception as e:  # a sanity rule's panic: some rule merged what must stay apart
                if "panic" not in str(e).lower() and type(e).__name__ != "EggSmolError":
                    raise
                names = ", ".join(n for n, _, _ in families)
                raise EqsatError(f"saturation stopped: {e}; some rule is unsound (rule sources in use: "
                                 f"{names})") from None
            report.build_seconds = t1 - t0
            report.not_run = [label for (n, r, f), (_, r2, f2) in zip(families, running)
                              for label, x, x2 in ((n, r, r2), (f"{n}.facts", f, f2)) if x is not None and x2 is None]
            if lowered.kept_for_time:
                report.stop_reason += (f"; {len(lowered.kept_for_time)} of {len(lowered.nests)} loop nests kept "
                                       f"as written for time (not analysed, or the analysis abandoned: lifting "
                                       f"them was predicted to pass the time limit)")
            t2 = t = lap("rule engine", t)
            graph = egraph.read_back(eg)
            t = lap("read back", t)
        t = lap("prepared e-graph", t)  # popping this call's work off it
    # extract the cheapest
    nest_work = {n.id: n.work for n in lowered.nests.values()}
    items = graph.class_items(input_items(prog))
    ext = Extractor(graph, lambda shape: Model(TARGETS[target], shape, nest_work.__getitem__,
                                               lambda cid: items.get(cid, ITEM)))
    root_classes = [graph.outputs[i] for i in range(len(lowered.roots))]
    greedy = ext.decode_roots(root_classes)  # None: every try met a cycle (then not a candidate)
    forms = {} if greedy is None else {"greedy": greedy}
    ilp_stats = None
    tensors = sum(len(ns) for ns in graph.classes.values() if ns[0].sort == "Ten")
    # "auto" solves within what is left of the time limit, and not at all with less than
    # MIN_ILP_SECONDS left (greedy's plan stands: setting the program up alone takes longer)
    left = limits.seconds - (time.perf_counter() - t0)
    auto_budget = min(AUTO_ILP_SECONDS, limits.seconds / 8, left)
    # (the first solve in a process imports SciPy's HiGHS first: ~0.3 s here)
    start_up = 0.0 if "scipy.optimize" in sys.modules else ILP_IMPORT_SECONDS
    if extract == "ilp" or (extract == "auto" and tensors <= ILP_AUTO_NODES and
                            (greedy is None or auto_budget >= MIN_ILP_SECONDS and left >= start_up + MIN_ILP_SECONDS)):
        from . import ilp

        budget = limits.seconds if extract == "ilp" else max(auto_budget, MIN_ILP_SECONDS)
        sol = ilp.solve(ext, root_classes, time_limit=budget, shortcut=extract == "auto" and greedy is not None)
        ilp_stats = sol["stats"]
        if sol["choice"]:
            ext.override = sol["choice"]
            try:
                forms["ilp"] = [ext.decode(c, {}) for c in root_classes]
            except ExtractionCycle:  # through a scalar the program did not see: keep greedy's
                ilp_stats["status"] += " (its choice closed a cycle; not used)"
            except NoForm:  # a class left uncosted (saturation stopped early)
                ilp_stats["status"] += " (its choice reached a class with no costed form; not used)"
    t = lap("extract", t)  # the greedy fixpoint, decoding, and the ILP where it runs
    # alike kernels up to the names of their loop variables become one (eqsat/alpha.py)
    renamed = {}
    for k in list(forms):
        forms[k], renamed[k] = alpha.canonical(forms[k])
    forms["as written"] = lowered.roots
    t = lap("canonical names", t)
    costing = plan_costing(target, lowered, input_items(prog))
    # every candidate priced by the one cost model; the cheapest wins, on a tie the smaller
    # (views of views count: `transpose(x, p)` over `transpose(transpose(x, q), r)`), then
    # the exact extraction's, then greedy's (the program as written only when it is
    # strictly cheaper)
    prices = {k: costing.total(r) for k, r in forms.items()}
    order = [k for k in ("ilp", "greedy", "as written") if k in prices]
    chosen = min(order, key=lambda k: (prices[k], _term_size(forms[k]), order.index(k)))
    roots = forms[chosen]
    if chosen != "ilp":
        ext.override = {}
    extract_seconds = time.perf_counter() - t2
    t = lap("price forms", t)
    view = explain.egraph_view(ext, root_classes, lowered.roots if chosen != "as written" else None,
                               _rule_table(families), report.rule_matches, renamed.get(chosen),
                               fused_roots=start.roots if start is not lowered else None)
    t = lap("explain", t)
    names = [n for n, _, _ in families]
    plan = Plan(prog, shapes, target, lowered, roots, report, names, costing)
    t = lap("plan", t)
    if candidates > 1:
        from . import candidates as cands

        plan.alternatives = cands.distinct(
            ext, root_classes, plan,
            lambda r: Plan(prog, shapes, target, lowered, alpha.canonical(r)[0], report, names, costing),
            candidates, seconds=min(2.0, limits.seconds / 4))
        lap("candidates", t)
    plan.phases = phases
    plan.extract_seconds = extract_seconds
    plan.extract_method = extract
    plan.ilp = ilp_stats
    plan.extraction = {"chosen": chosen, "cost": prices}
    plan.egraph_view, plan.provenance = view.data, view.provenance(plan.kernels)
    plan._rule_table = _rule_table(families)
    plan._request = {"rules": rules, "limits": limits, "extract": extract}
    if _keep_extractor:
        plan._extractor = (ext, root_classes)
    plan.egraph_nodes = graph.n_nodes()
    plan.optimize_seconds = time.perf_counter() - t0
    if plan.egraph_nodes >= TRIM_NODES:  # what the e-graph held goes back to the system, not to an idle arena
        give_back_memory()
    if assuming and assume.has_site(lowered):
        plan = _assuming_plan(plan, assuming, t0)
    return plan


# below this many e-nodes an e-graph's memory is not worth returning (malloc_trim costs ~0.7 ms,
# a sixth of a small program's optimize())
TRIM_NODES = 5_000

# the share of Limits.seconds a user's rule files' check may take (once per file and process:
# `rulecheck.check`; its probes' saturation is what it bounds)
RULECHECK_SHARE = 0.4


def _assuming_plan(exact: "Plan", assuming: list, t0: float) -> "Plan":
    """The exact plan, or the plan of a second search with the assuming families added
    where the model rates it cheaper by `assume.MARGIN` with the run-time check's cost
    included (that plan then carries `assumes` and the exact plan as `fallback`). The
    second search gets what is left of `Limits.seconds`."""
    req = exact._request
    left = req["limits"].seconds - (time.perf_counter() - t0)
    if left <= 0.05 * req["limits"].seconds:
        return exact
    rules = _rule_list(req["rules"]) + list(assuming)
    fast = optimize(exact.program, exact.dims, target=exact.target, rules=rules,
                    limits=dataclasses.replace(req["limits"], seconds=left), extract=req["extract"],
                    candidates=1 + len(exact.alternatives), _checked=True, _lowered=exact.lowered, _assuming=False)
    check = assume.check_seconds(exact.program, exact.dims, TARGETS[exact.target])
    if not fast.cost + check < assume.MARGIN * exact.cost:
        exact.phases["assuming search"] = fast.optimize_seconds
        exact.optimize_seconds = time.perf_counter() - t0
        return exact
    for plan in fast.candidates:  # (each candidate of this search may rely on the assumption)
        plan.cost += check
        plan.assumes = "every float argument is finite"
        plan.fallback = exact
    fast.phases = {**exact.phases, "assuming search": fast.optimize_seconds}
    fast.optimize_seconds = time.perf_counter() - t0
    return fast


_TABLES: dict = {}  # rule sets in use -> their RuleTable, built once


def _term_size(roots) -> int:
    """Distinct nodes of a plan's terms."""
    seen: set = set()
    for r in roots:
        for _ in walk(r, seen):
            pass
    return len(seen)


def _rule_table(families):
    from .extract import CONSTRUCTORS
    from .provenance import RuleTable
    from .rules import analysis

    key = tuple(id(r) for _, r, _ in families)
    table = _TABLES.get(key)
    if table is None:
        named = [(name, r) for name, r, _ in families] + [(f"{name}.facts", f) for name, _, f in families
                                                          if f is not None]
        table = _TABLES[key] = RuleTable(named + [("analysis", analysis.ruleset)], CONSTRUCTORS)
        table.keep = [r for _, r, _ in families]  # keeps the ids in the key from being reused
    return table


def _matchable(families, start, opaque: dict) -> list:
    """`families` as (name, rewrites, facts) with each rule set that no rule can match in
    these terms' saturation replaced by None (`eqsat/relevance.py`): it never runs."""
    if not relevance.ENABLED:
        return families
    from .rules import analysis, sanity

    sets = [analysis.ruleset, sanity.ruleset] + [x for _, r, f in families for x in (r, f) if x is not None]
    terms = [*start.roots, *(x for pair in start.unions for x in pair), *opaque]
    on = dict(zip(map(id, sets), relevance.live(sets, relevance.start_tables(terms))))
    return [(n, r if r is not None and on[id(r)] else None, f if f is not None and on[id(f)] else None)
            for n, r, f in families]


_SUPPORT: dict = {}  # fact rule sets of a family selection -> their union, built once


def _support(families=()) -> Ruleset:
    """Rules that only derive facts: saturated before every round of rewrites."""
    from .rules import analysis, sanity

    facts = [f for _, _, f in families if f is not None]
    key = tuple(id(f) for f in facts)
    hit = _SUPPORT.get(key)
    if hit is None:
        out = analysis.ruleset | sanity.ruleset
        for f in facts:
            out = out | f
        if len(_SUPPORT) > 64:
            _SUPPORT.clear()
        hit = _SUPPORT[key] = (facts, out)  # the entry keeps the rule sets, so ids stay theirs
    return hit[1]


def _is_family(r) -> bool:
    from .rules import ASSUMING, FAMILIES

    return isinstance(r, str) and (r in FAMILIES or r in ASSUMING)


def _rule_list(rules) -> list:
    """`rules` as a list of sources: None is every family, one source is a list of one."""
    from .rules import FAMILIES

    if rules is None:
        return list(FAMILIES)
    if isinstance(rules, (str, os.PathLike, Ruleset)):
        return [rules]  # one family, file or ruleset
    return list(rules)


def _user_sources(rules) -> list:
    """(label, source) of every rule source in `rules` that is not a built-in family."""
    from .rules import FAMILIES

    out = []
    for r in _rule_list(rules):
        if _is_family(r):
            continue
        if isinstance(r, (str, os.PathLike)) and not os.path.isfile(r) or \
                not isinstance(r, (str, os.PathLike, Ruleset)) and not isinstance(getattr(r, "ruleset", None), Ruleset):
            # (a typo, or something that is no rule source, is not an unsound rule)
            raise ArgumentError(f"unknown rule family or file {r!r}; a rule source is a family's name, a rule "
                                f"file's path, a module with a `ruleset`, or an egglog Ruleset; families: "
                                f"{', '.join(FAMILIES)}")
        label = (str(r) if isinstance(r, (str, os.PathLike)) else
                 getattr(r, "__file__", None) or str(getattr(r, "name", None) or getattr(r, "__name__", r)))
        out.append((label, r))
    return out


def resolve_rules(rules) -> list:
    from .rules import FAMILIES

    out = []
    for r in _rule_list(rules):
        if isinstance(r, Ruleset):
            out.append((str(getattr(r, "name", "ruleset")), r, None))
        elif _is_family(r):
            out.append(_family(r, importlib.import_module(f"eqsat.rules.{r}")))
        elif isinstance(r, (str, os.PathLike)) and os.path.isfile(r):
            out.append(_family(os.path.basename(str(r)), _load_rule_file(str(r))))
        elif hasattr(r, "ruleset") and isinstance(r.ruleset, Ruleset):
            out.append(_family(r.__name__.rsplit(".", 1)[-1], r))
        else:
            raise ArgumentError(f"unknown rule family or file {r!r}; families: {', '.join(FAMILIES)}")
    return out


def _family(name: str, mod) -> tuple:
    """(name, rewrite ruleset, fact ruleset or None): a rule file may define `analysis`, facts
    its rewrites read, which then saturate with the support rules."""
    facts = getattr(mod, "analysis", None)
    return name, mod.ruleset, facts if isinstance(facts, Ruleset) else None


def _load_rule_file(path: str):
    """A user's rule file as a module; an ArgumentError naming the file where it is no
    Python file, does not load, or defines no `ruleset` (bad input, not an unsound rule)."""
    name = "eqsat_user_rules_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ArgumentError(f"{path}: a rule file is a Python file (.py) defining `ruleset`")
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except (Exception, SystemExit) as e:  # a user's file (sys.exit too): report where, not a deep traceback
        raise ArgumentError(f"{path}: cannot load rule file: {type(e).__name__}: {e}") from e
    rs = getattr(mod, "ruleset", None)
    if not isinstance(rs, Ruleset):
        raise ArgumentError(f"{path}: a rule file must define `ruleset` (an egglog @ruleset), got "
                            f"{type(rs).__name__ if rs is not None else 'none'}")
    facts = getattr(mod, "analysis", None)
    if facts is not None and not isinstance(facts, Ruleset):
        raise ArgumentError(f"{path}: a rule file's `analysis` is an egglog @ruleset of the facts its rewrites "
                            f"read, got {type(facts).__name__}")
    for r in filter(None, (rs, facts)):
        try:
            r._update_egg_decls()  # (egglog-python builds a ruleset's rules when first used: a sort mismatch now)
        except Exception as e:  # noqa: BLE001 - the user's rules: report which file, not egglog's traceback
            raise ArgumentError(f"{path}: egglog cannot use its rules: {type(e).__name__}: {one_line(e)}") from None
    return mod


def _opaque_shapes(lowered) -> dict:
    out = {}
    seen = set()
    for root in list(lowered.roots) + [x for pair in lowered.unions for x in pair]:
        for n in walk(root, seen):
            if n.op == "Ten.opaque":
                out[n] = lowered.nests[n.args[0]].out_shapes[n.args[1]]
    return out


_NONE: dict = {}  # (read only) no runner built yet


class Plan:
    """The chosen form of a program at fixed sizes (see DESIGN.md for the contract)."""

    def __init__(self, program, dims, target, lowered, roots, report, rules, costing=None):
        self.program = program
        self.dims = dims
        self.target = target
        self.lowered = lowered
        self.roots = roots
        self.report = report
        self.rules = rules
        self.costing = costing or plan_costing(target, lowered, input_items(program))
        self.kernels: list[Kernel] = form_kernels(roots, self.costing, lowered.nests)
        # nest id -> (compiled runner or None, how it runs): filled by the numpy backend on the
        # first run (kept loops compile once per plan; see backends/loops.py)
        self.loop_runners: dict = {}
        # kernel name -> (compiled kernel or None, how it runs): pointwise and reduction
        # kernels the numpy backend compiles (backends/cpu_kernels.py), on the first run
        self.kernel_runners: dict = {}
        self.alternatives: list = []  # optimize(candidates=k): the next cheapest distinct plans
        self.tuning: list | None = None  # their modeled and measured ranks, once compiled
        self.cost = self.costing.total(roots)
        self.assumes: str | None = None  # what the arguments must satisfy for this plan (eqsat/assume.py)
        self.fallback: Plan | None = None  # the exact plan, run where they do not
        self.baseline_cost = self.costing.total(lowered.roots)
        self.nest_terms = {}
        self.var_extent = {}
        for r in roots:
            for n in walk(r):
                if n.op == "Ten.opaque":
                    self.nest_terms.setdefault(n.args[0], n)
                elif n.op == "Dims.cons":
                    self.var_extent[n.args[0]] = n.args[1]
                elif n.op == "Sc.red":
                    self.var_extent[n.args[1]] = n.args[2]

    def __copy__(self):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __reduce__(self):
        raise EqsatError("a Plan holds compiled code and does not pickle: keep what re-creates it (the program, "
                         "shapes, target and rules; `eqsat optimize ... --save`) and optimize again, or use "
                         "optimize_many, which sends plans back from its workers")

    # ------------------------------------------------------------------ running
    def run(self, *args, backend: str = "numpy", **kwargs):
        """Run the plan on these arguments (numpy arrays, torch tensors, anything array-like;
        parameters are passed by value), by position or by the parameters' names as the
        function takes them. backend "numpy" (BLAS and numba on this CPU) or "triton" (the
        generated kernels; results in the caller's kind: torch in, torch out on the same
        device). Each backend's runner is built on the first call."""
        if kwargs:
            args = by_position(self.program, args, kwargs, own=("backend",))
        if not isinstance(backend, str) and any(p.name == "backend" for p in self.program.params):
            raise ArgumentError(f"`backend=` is run()'s own keyword (numpy or triton); pass {self.program.name}'s "
                                f"parameter 'backend' by position")
        call = self.__dict__.get("_calls", _NONE).get(backend) if isinstance(backend, str) else None
        if call is None:  # the first call on this backend: build its runner, keep its entry
            runner = self.compiled(backend)
            call = self.__dict__.setdefault("_calls", {}).setdefault(backend, getattr(runner, "entry", runner))
        return call(args)

    def unbound_dims(self) -> dict:
        """The plan's sizes of the dims no argument carries (named only in the return
        annotation): a call binds its arguments with these (`args.bind_args`)."""
        got = self.__dict__.get("_unbound_dims")
        if got is None:
            carried = {d for p in self.program.params for d in (p.shape or ()) if isinstance(d, str)}
            carried |= {p.name for p in self.program.params if p.dtype is int}
            got = self.__dict__["_unbound_dims"] = {d: n for d, n in self.dims.items() if d not in carried}
        return got

    def check_dims_of_call(self, dims: dict) -> None:
        for d, n in dims.items():
            if self.dims.get(d) != n:
                raise ArgumentError(f"this plan was optimized for {d}={self.dims.get(d)}, but the arguments "
                                    f"have {d}={n}; call optimize() again for these sizes")

    @property
    def candidates(self) -> list:
        """This plan, then the distinct plans `optimize(candidates=k)` kept, cheapest first."""
        return [self, *self.alternatives]

    def compiled(self, backend: str = "numpy"):
        """The runner of this plan on a backend, built on first use and kept. numpy: the
        kernels traced into one straight-line function, kept loops compiled by numba
        (`backends/numpy_compiled.py`). triton: the kernels generated and loaded once,
        intermediates kept on the device (`backends/triton_compiled.py`). `.how` says how
        it runs (and why, where it falls back).

        With `optimize(candidates=k)`, where the backend's timings mean something here
        (numpy on this CPU, triton on a CUDA device), every candidate is run on random
        arguments and the fastest one's runner is kept (`runner.plan` is that candidate;
        `self.tuning` ranks them by model and by measurement). Elsewhere this plan's."""
        from eqsat.backends import registry

        if not isinstance(backend, str):  # (a list, ...: not a backend's name)
            raise ArgumentError(f"backend must be a backend's name ({', '.join(registry.names())}), got {backend!r}")
        runners = self.__dict__.setdefault("_runners", {})
        c = runners.get(backend)
        if c is None:
            impl = registry.get(backend)
            t0 = time.perf_counter()
            chosen = self
            if self.alternatives and impl.measures():
                from . import candidates
                from .args import random_args

                try:
                    i, self.tuning = candidates.fastest(self.candidates, backend, random_args(self.program, self.dims))
                    chosen = self.candidates[i]
                except Exception:  # noqa: BLE001 - the program raised on random arguments (a name
                    # they leave unassigned): the model's choice stands, the caller's arguments decide
                    chosen = self
            c = chosen._compile_one(backend)
            params = self.program.params
            scalars = chosen.checked_scalars()
            if scalars:
                divisors = chosen.divisor_scalars()
                c = assume.Guarded(c, lambda: chosen.written_plan().compiled(backend), scalars,
                                   [params[i].dtype for i in scalars],
                                   f"{getattr(c, 'how', 'compiled')}; as written where a float scalar argument is "
                                   f"inf or NaN" + (" or a divisor is zero" if divisors else ""), nonzero=divisors)
            if self.fallback is not None:
                floats = [i for i, p in enumerate(params) if p.dtype is not int]
                slow = self.fallback.compiled(backend)
                c = assume.Guarded(c, lambda: slow, floats, [params[i].dtype for i in floats],
                                   f"{getattr(c, 'how', 'compiled')}; when {self.assumes}, else the exact plan "
                                   f"({getattr(slow, 'how', '')})")
            self.compile_seconds = time.perf_counter() - t0
            runners[backend] = c
        return c

    def __deepcopy__(self, memo):
        """A Plan is not changed once optimize() has made it, so a deep copy shares its parts
        (egglog's rule declarations it holds cannot be copied: `copy.deepcopy` failed)."""
        new = memo[id(self)] = copy.copy(self)
        return new

    def checked_scalars(self) -> list:
        """Positions of the float scalar parameters this plan checks on every call (inf or
        NaN runs the program as written: `assume.Guarded`); none where it is as written."""
        if self.as_written():
            return []
        return [i for i, p in enumerate(self.program.params) if p.shape is None and p.dtype is not int]

    def divisor_scalars(self) -> list:
        """Positions of the float scalar parameters the program divides by (`x / alpha`),
        among `checked_scalars`: a zero one also runs the program as written, since the
        algebra family moves a division out of a sum (`sum[k] x[k] / alpha == (sum[k] x[k]) /
        alpha`: for alpha = 0, terms of both signs give NaN there, +-inf here)."""
        checked = self.checked_scalars()
        if not checked:
            return []
        names: set = set()
        seen: set = set()
        low = self.lowered
        for r in [*low.roots, *(x for pair in low.unions for x in pair)]:
            for n in walk(r, seen):
                if n.op == "Sc.div":
                    names.update(m.args[0] for m in walk(n.args[1]) if m.op == "Sc.param")
        params = self.program.params
        return [i for i in checked if params[i].name in names]

    def as_written(self) -> bool:
        """Is this plan the program as written (its lowered terms, none rewritten)?"""
        return len(self.roots) == len(self.lowered.roots) and all(
            a is b for a, b in zip(self.roots, self.lowered.roots))

    def written_plan(self) -> "Plan":
        """The program as written, as a plan (made once; `checked_scalars` fall back on it)."""
        got = self.__dict__.get("_written")
        if got is None:
            got = self._written = Plan(self.program, self.dims, self.target, self.lowered, list(self.lowered.roots),
                                       self.report, self.rules, self.costing)
        return got

    def _compile_one(self, backend: str):
        """This plan's own runner on a backend (kept: a candidate compiled for timing is
        not compiled again)."""
        from eqsat.backends import registry

        own = self.__dict__.setdefault("_own_runners", {})
        if backend not in own:
            own[backend] = registry.get(backend).compile(self)
        return own[backend]

    def source(self, backend: str = "numpy") -> str:
        """The code this plan runs on a backend (numpy: its straight-line function; triton:
        the generated kernels)."""
        from eqsat.backends import registry

        return registry.get(backend).source(self)

    def compile_loops(self) -> float:
        """Compile the loop nests kept as written now (numba; otherwise the first `run`
        does it). Returns the seconds it took; `loop_runners` then says how each runs."""
        from eqsat.backends import cpu_kernels, loops

        t0 = time.perf_counter()
        for k in self.kernels:
            if k.kind == "loop" and k.nest not in self.loop_runners:
                self.loop_runners[k.nest] = loops.build(self, self.lowered.nests[k.nest])
            elif cpu_kernels.wanted(self, k) and k.name not in self.kernel_runners:
                self.kernel_runners[k.name] = cpu_kernels.build(self, k)
        return time.perf_counter() - t0

    def vectorization(self, ptx: bool = False, arch: int = 90) -> list:
        """For every load and store of every Triton kernel: its contiguous axis, the vector
        width Triton can prove at launch, and why (`backends/vector_report.py`); `ptx=True`
        adds each kernel's vector instruction counts from its sm_<arch> PTX compiled the way
        the launcher specializes it (needs Triton's compiler, no GPU)."""
        from eqsat.backends import vector_report

        return vector_report.report(self, ptx=ptx, arch=arch)

    def triton_source(self) -> str:
        """The generated Triton kernels, as one Python source string."""
        return self.source("triton")

    # ------------------------------------------------------------------ reading
    def view(self, path) -> str:
        """Write the viewer page (one self-contained HTML file) and return its path."""
        from .view import write

        return write(self, path)

    def explain(self) -> str:
        """Why this form: the extraction candidates and their prices, then per kernel the
        chain of e-nodes from its output down, each with the rules that may have built it
        (`provenance.py` says how they are found), and the rules that fired most."""
        ext = getattr(self, "extraction", None) or {}
        prices = ", ".join(f"{k} {v * 1e6:.3f} us" for k, v in ext.get("cost", {}).items())
        lines = [f"{self.program.name}: chose {ext.get('chosen', '?')} ({prices})"]
        for entry in getattr(self, "provenance", None) or []:
            lines.append(f"  {entry['kernel']}:")
            for step in entry["steps"]:
                where = f" [{step['class'].rsplit('-', 1)[-1]}]" if step["class"] else ""
                rules = step["rules"][:4] + ([f"(+{len(step['rules']) - 4} more)"] if len(step["rules"]) > 4 else [])
                lines.append(f"    {step['op']}{where} <- {' | '.join(rules) or '(no rule that fired builds it)'}")
        top = sorted(self.report.rule_matches.items(), key=lambda kv: -kv[1])[:10]
        if top:
            lines.append("  rules that matched most: " + ", ".join(f"{k} ({v})" for k, v in top))
        return "\n".join(lines)

    def why_not(self, pattern: str):
        """Is the expected form (`"matmul+add+relu"`, `"relu>matmul"`, `"pointwise"`; several
        kernels separated by commas) chosen, in the e-graph at a higher price, or missing, and
        why (`eqsat/whynot.py`). Rebuilds the e-graph (the same saturation) to look."""
        from .whynot import why_not

        return why_not(self, pattern)

    def _reextract(self):
        """(Extractor, output classes) of this plan's e-graph, rebuilt."""
        req = getattr(self, "_request", None)
        if req is None:
            raise EqsatError("this plan was not made by optimize(); it has no e-graph to look in")
        again = optimize(self.program, self.dims, target=self.target, rules=req["rules"], limits=req["limits"],
                         extract=req["extract"], _checked=True, _keep_extractor=True, _assuming=False,
                         _lowered=self.lowered)
        return again._extractor

    def names(self) -> dict:
        out = {}
        for k in self.kernels:
            if k.term is not None:
                out[k.term] = k.name
        return out

    def __str__(self) -> str:
        r = self.report
        sizes = ", ".join(f"{k}={v}" for k, v in self.dims.items())
        lines = [
            f"plan for {self.program.name} on {self.target} ({sizes})",
            f"  modeled cost {self.cost * 1e6:.3f} us; as written {self.baseline_cost * 1e6:.3f} us "
            f"({self.baseline_cost / self.cost:.2f}x)" if self.cost else "  modeled cost 0",
            f"  e-graph: {r.nodes} e-nodes after {r.iterations} iterations ({r.stop_reason}); "
            f"optimize() took {getattr(self, 'optimize_seconds', 0):.3f} s",
            f"  rules: {', '.join(self.rules) or '(none)'}",
        ]
        if self.fallback is not None:
            lines.append(f"  assumes {self.assumes} (checked on every call; otherwise the exact plan runs, "
                         f"modeled {self.fallback.cost * 1e6:.3f} us)")
        if self.checked_scalars():
            lines.append("  float scalar arguments are checked on every call: where one is inf or NaN the "
                         "program runs as written (a scalar factor moved out of a sum is exact for finite ones)")
        names = self.names()
        for k in self.kernels:
            epi = f" + {'+'.join(k.epilogue)}" if k.epilogue else ""
            epi = f"{'+'.join(k.prologue)}> {k.kind}{epi}" if k.prologue else f"{k.kind}{epi}"
            runs = f"; {self.loop_runners[k.nest][1]}" if k.kind == "loop" and k.nest in self.loop_runners else ""
            what = (f"loop nest #{k.nest} as written ({self.lowered.nests[k.nest].reason or 'kept'}{runs})"
                    if k.kind == "loop" else describe(k.term, {n: m for n, m in names.items() if n is not k.term}))
            if k.name in self.kernel_runners:
                what += f"  [{self.kernel_runners[k.name][1]}]"
            lines.append(f"  {k.name:<14} {epi:<26} {k.cost * 1e6:9.3f} us  {what}")
        outs = ", ".join(show(r, names) for r in self.roots)
        lines.append(f"  return {outs}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Plan {self.program.name}: {len(self.kernels)} kernels, {self.cost * 1e6:.2f} us>"
