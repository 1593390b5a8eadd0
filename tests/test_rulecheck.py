"""A user's rule file is checked on probe programs before it is trusted (issue 9): the
three unsound rules a new user writes first are refused with a message naming the file;
a sound file is accepted; a sanity panic names the rule sources in use."""
from __future__ import annotations

import pytest

import eqsat
from conftest import random_args, rel_err
from eqsat import rulecheck
from eqsat.errors import EqsatError

UNSOUND = {
    "relu_is_identity": '''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc

@ruleset
def ruleset(x: Sc):
    yield rewrite(Sc.fn("relu", x)).to(x)
''',
    "product_is_first_factor": '''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc

@ruleset
def ruleset(x: Sc, y: Sc):
    yield rewrite(Sc.mul(x, y)).to(x)
''',
    # "a square tensor is its own transpose": true only for symmetric ones
    "square_transpose_is_identity": '''
from egglog import eq, i64, rule, ruleset, union
from eqsat.sorts import Shp, Ten, shape_of

@ruleset
def ruleset(a: Ten, n: i64):
    yield rule(eq(shape_of(a)).to(Shp.cons(n, Shp.cons(n, Shp.nil())))).then(
        union(Ten.transpose(a, "1 0")).with_(a))
''',
}

SOUND = '''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc

@ruleset
def ruleset(x: Sc, y: Sc):
    yield rewrite(Sc.add(x, y)).to(Sc.add(y, x))
'''

PROGRAM = '''
@program
def p(x: f32["M", "N"], y: f32["M", "N"]) -> f32["M", "N"]:
    return relu(x) * y + 1.0
'''


@pytest.fixture
def checking(monkeypatch):
    monkeypatch.setenv("EQSAT_CHECK_RULES", "1")
    rulecheck._CHECKED.clear()
    yield
    rulecheck._CHECKED.clear()


@pytest.mark.parametrize("name", sorted(UNSOUND))
def test_unsound_rule_file_is_refused_naming_it(tmp_path, tmp_program, checking, name):
    path = tmp_path / f"{name}.py"
    path.write_text(UNSOUND[name])
    prog = tmp_program(PROGRAM)
    with pytest.raises(rulecheck.UnsoundRule, match=str(path)):
        eqsat.optimize(prog, {"M": 2, "N": 3}, rules=["inline", str(path)])


def test_sound_rule_file_is_accepted_and_used(tmp_path, tmp_program, checking):
    path = tmp_path / "commute.py"
    path.write_text(SOUND)
    prog = tmp_program(PROGRAM)
    dims = {"M": 2, "N": 3}
    plan = eqsat.optimize(prog, dims, rules=["inline", str(path)])
    assert "commute.py" in plan.rules
    args = random_args(prog, dims, 0)
    assert rel_err(plan.run(*args), eqsat.reference(prog, *args)) < 1e-6


def test_sanity_panic_names_the_rule_sources(tmp_path, tmp_program):
    # unchecked (the probe check is off here): the sanity rules catch a merge of two
    # different constants and the error names what was running
    path = tmp_path / "merge_constants.py"
    path.write_text('''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc

@ruleset
def ruleset(x: Sc):
    yield rewrite(Sc.lit(1.0)).to(Sc.lit(2.0))
''')
    prog = tmp_program(PROGRAM)
    with pytest.raises(EqsatError, match="merge_constants.py"):
        eqsat.optimize(prog, {"M": 2, "N": 3}, rules=[str(path)])


def test_a_rule_file_egglog_cannot_use_is_refused_naming_it(tmp_path, tmp_program, checking):
    """A rewrite from a scalar to a tensor: egglog refuses it when the rules are built, which
    once surfaced as its raw ConvertError, naming no file; it is bad input (ArgumentError),
    said when the file is loaded, not a probe's finding."""
    path = tmp_path / "wrong_sort.py"
    path.write_text('''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc, Ten

@ruleset
def ruleset(a: Sc, t: Ten):
    yield rewrite(Sc.fn("relu", a)).to(t)
''')
    prog = tmp_program(PROGRAM)
    with pytest.raises(eqsat.ArgumentError, match=f"{path}: egglog cannot use its rules: ConvertError"):
        eqsat.optimize(prog, {"M": 2, "N": 3}, rules=["inline", str(path)])


def test_rules_no_probe_matched_are_named_in_a_warning(tmp_path, tmp_program, checking):
    """`sqrt(a * a) -> a` is unsound for a < 0, and no probe holds a sqrt of a square: the
    probes cannot refuse it, so optimize() says it went unchecked (once per source)."""
    path = tmp_path / "sqrt_square.py"
    path.write_text('''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc

@ruleset
def ruleset(a: Sc):
    yield rewrite(Sc.fn("sqrt", Sc.mul(a, a))).to(a)
''')
    prog = tmp_program(PROGRAM)
    with pytest.warns(rulecheck.UnsoundRuleWarning, match=r"sqrt_square.py: 1 of its rules matched no probe"):
        eqsat.optimize(prog, {"M": 2, "N": 3}, rules=["inline", str(path)])
    sound = tmp_path / "commute.py"
    sound.write_text(SOUND)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", rulecheck.UnsoundRuleWarning)
        eqsat.optimize(prog, {"M": 2, "N": 3}, rules=["inline", str(sound)])  # its one rule matches probes


def test_a_rule_file_whose_analysis_is_no_ruleset_is_refused(tmp_path, tmp_program):
    """`analysis = 42` in a rule file (a probe's) was accepted and ignored."""
    path = tmp_path / "bad_analysis.py"
    path.write_text('''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc

@ruleset
def ruleset(x: Sc):
    yield rewrite(Sc.add(x, Sc.lit(0.0))).to(Sc.add(Sc.lit(0.0), x))

analysis = 42
''')
    prog = tmp_program(PROGRAM)
    with pytest.raises(eqsat.ArgumentError, match=f"{path}: a rule file's `analysis`.*int"):
        eqsat.optimize(prog, {"M": 2, "N": 3}, rules=["inline", str(path)])


def test_the_check_takes_a_share_of_the_time_limit(tmp_path, tmp_program, checking, monkeypatch):
    """The probes of a user's rule file run within a share of the caller's Limits.seconds
    (each ran at its own 2 s: a probe's exploding rule set took 5 s at Limits(seconds=1)),
    and a program is still optimized, correctly, after it."""
    from eqsat import api

    path = tmp_path / "commute.py"
    path.write_text('''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc

@ruleset
def ruleset(x: Sc, y: Sc):
    yield rewrite(Sc.add(x, y)).to(Sc.add(y, x))
''')
    seen = []
    real = api.optimize

    def spy(prog, dims, **kw):
        if kw.get("_checked"):
            seen.append(kw["limits"].seconds)
        return real(prog, dims, **kw)

    monkeypatch.setattr(api, "optimize", spy)
    prog = tmp_program(PROGRAM)
    plan = eqsat.optimize(prog, {"M": 2, "N": 3}, rules=["inline", str(path)], limits=eqsat.Limits(seconds=1.0))
    assert seen and sum(seen) <= api.RULECHECK_SHARE * 1.0 + 1e-9, seen
    args = random_args(prog, {"M": 2, "N": 3}, seed=0)
    assert rel_err(plan.run(*args), eqsat.reference(prog, *args)) < 1e-5
