"""Every rule timed alone on each program's saturated e-graph: finds rules whose query egglog
plans badly.

    .venv/bin/python bench/rule_audit.py [--over 0.05] [--programs corpus,polybench,loopsuites]
                                         [--file prog.py ...] [--json]

egglog compiles a rule's query into a join plan that follows the order of its atoms more
than the sizes of the tables they read: one rule written as a single large query (the
two-batch-axis matmul rule, matched together with both operands' shapes) spent ~90 s a
step on a 1,300-node e-graph that held no 4-D tensor, while the same atoms in another
order took milliseconds. A step cannot be interrupted, so such a rule passes every time
limit. This audit finds them: for each program, optimize() runs as usual, and when
saturation ends, on the e-graph it reached, every rule of every rule set that ran is run
once on its own (a rule set of that one rule, pushed and popped, so it matches the whole
e-graph, as a rule new to a round does) and timed.

Programs: the public corpus (`SHAPES`), PolyBench (tests/polybench, their `SHAPES`), the
loop suites (tests/loopsuites at their test sizes), and any `--file` holding a @program
and `SHAPES`. Prints the rules over `--over` seconds on any program (the slowest first,
with the program) and the slowest rule overall; exit status 1 when any rule passes 1 s.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "loopsuites"))


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"audit_{path.stem}_{abs(hash(path))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _with_shapes(paths):
    from eqsat.ir import Program

    for path in paths:
        mod = _module(path)
        prog = next((v for v in vars(mod).values() if isinstance(v, Program)), None)
        if prog is not None and isinstance(getattr(mod, "SHAPES", None), dict):
            yield path.stem, prog, dict(mod.SHAPES)


def programs(which: list, files: list):
    from common import corpus_dir

    if "corpus" in which:
        yield from _with_shapes(sorted(corpus_dir().glob("*.py")))
    if "polybench" in which:
        yield from _with_shapes(sorted((ROOT / "tests" / "polybench").glob("*.py")))
    if "loopsuites" in which:
        import kernels
        import more_kernels

        def ints(extra):  # (integer parameters are given with the sizes)
            return {k: v for k, v in extra.items() if isinstance(v, int) and not isinstance(v, bool)}

        for name in sorted(kernels.K):
            prog, sizes, extra = kernels.K[name]
            yield f"tsvc/{name}", prog, {**kernels.small(sizes), **ints(extra)}
        for name in sorted(more_kernels.K):
            prog, _, extra = more_kernels.K[name]
            yield f"more/{name}", prog, {**more_kernels.small(name), **ints(extra)}
    yield from _with_shapes([Path(f) for f in files])


def rule_sets() -> list:
    """(name, Ruleset) of every rule set a default optimize() may run: the families'
    rewrites and facts, and the support rules."""
    from eqsat import api
    from eqsat.rules import analysis, sanity

    out = [("analysis", analysis.ruleset), ("sanity", sanity.ruleset)]
    for name, rewrites, facts in api.resolve_rules(None):
        out += [(name, rewrites)] + ([(f"{name}.facts", facts)] if facts is not None else [])
    return out


def single_rules(rs) -> list:
    """[(rule declaration, Ruleset of that one rule)], sharing `rs`'s declarations."""
    from egglog import ruleset

    from eqsat.provenance import _rules_of

    out = []
    for n, decl in enumerate(_rules_of(rs)):
        one = ruleset(name=f"audit.{rs.__egg_ident__}.{n}")
        one._current_egg_decls.update(rs.__egg_decls__)
        one.__egg_ruleset__.rules.append(decl)
        out.append((decl, one))
    return out


def audit(name, prog, sizes, singles: list, table) -> list:
    """[(seconds, program, rule name)]: every rule in `singles` run alone on the e-graph
    optimize() saturated for `prog` (at its end, on the cpu target)."""
    import eqsat
    from eqsat import api

    found: list = []
    orig = api.egraph.saturate

    def saturate(eg, *a, **k):
        rep = orig(eg, *a, **k)
        for decl, one in singles:
            eg.push()
            t = time.perf_counter()
            try:
                eg.run(one)
            finally:
                seconds = time.perf_counter() - t
                eg.pop()
            found.append((seconds, name, table.name(decl)))
        return rep

    api.egraph.saturate = saturate
    try:
        eqsat.optimize(prog, sizes, target="cpu")
    finally:
        api.egraph.saturate = orig
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--over", type=float, default=0.05, help="report rules slower than this (s)")
    ap.add_argument("--programs", default="corpus,polybench,loopsuites")
    ap.add_argument("--file", action="append", default=[])
    ap.add_argument("--json", action="store_true", help="print every timing as JSON")
    args = ap.parse_args(argv)
    from eqsat.extract import CONSTRUCTORS
    from eqsat.provenance import RuleTable

    sets = rule_sets()
    table = RuleTable(sets, CONSTRUCTORS)
    singles = [x for _, rs in sets for x in single_rules(rs)]
    allt: list = []
    t0 = time.perf_counter()
    n_prog = 0
    for name, prog, sizes in programs(args.programs.split(","), args.file):
        n_prog += 1
        try:
            allt += audit(name, prog, sizes, singles, table)
        except Exception as e:  # (a refused program has no e-graph to audit)
            print(f"{name}: not audited ({type(e).__name__}: {str(e).splitlines()[0][:100]})")
    allt.sort(reverse=True)
    if args.json:
        print(json.dumps([{"seconds": s, "program": p, "rule": r} for s, p, r in allt]))
    slow = [x for x in allt if x[0] > args.over]
    print(f"{n_prog} programs, {len(singles)} rules, {len(allt)} rule runs, {time.perf_counter() - t0:.0f} s; "
          f"{len(slow)} over {args.over:g} s")
    for s, p, r in slow[:40]:
        print(f"  {s:8.3f} s  {p:28s} {r[:110]}")
    if allt:
        s, p, r = allt[0]
        print(f"slowest: {s:.3f} s, {r[:110]} on {p}")
    return 1 if allt and allt[0][0] > 1.0 else 0


if __name__ == "__main__":
    sys.exit(main())
