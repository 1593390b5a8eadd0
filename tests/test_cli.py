"""The `eqsat` command (issue 9): optimize, check-rules and view, and its errors: every bad
input is one short line on stderr with exit status 2, never a traceback.

Most commands run in this process (`cli.main`, its output captured); the console script,
`python -m eqsat` and one end-to-end run go through a real process."""
from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import corpus_paths
from eqsat import api, cli, rulecheck
from test_rulecheck import SOUND, UNSOUND

REPO = Path(__file__).resolve().parents[1]
SILU_RULE = REPO / "eqsat" / "examples" / "silu_rule.py"

TWO = '''from eqsat import *

SHAPES = {"M": 4, "N": 3}


@program
def first(x: f32["M", "N"]) -> f32["M", "N"]:
    return x + 1.0


@program
def second(x: f32["M", "N"], y: f32["N", "M"]) -> f32["M", "M"]:
    return relu(x @ y)
'''

ONE = '''from eqsat import *

SHAPES = {"M": 6, "K": 5, "N": 4}


@program
def lin(x: f32["M", "K"], w: f32["K", "N"], b: f32["N"]) -> f32["M", "N"]:
    return relu(x @ w + b)
'''


@pytest.fixture
def run_cli(capsys):
    """cli.main(args) in this process: (exit status, stdout, stderr)."""

    def go(*args):
        try:
            rc = cli.main([str(a) for a in args])
        except SystemExit as e:  # argparse's usage errors
            rc = e.code
        out = capsys.readouterr()
        return rc, out.out, out.err

    return go


@pytest.fixture
def files(tmp_path):
    def write(name: str, text: str) -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p

    return write


def short_error(err: str, *words, lines: int = 2):
    """A bad input: at most `lines` lines on stderr, naming `words`, no traceback."""
    assert "Traceback" not in err, err
    text = err.strip()
    assert text and len(text.splitlines()) <= lines, err
    for w in words:
        assert str(w) in text, (w, err)


# ------------------------------------------------------------------ real processes
def test_console_script_and_python_m_both_run():
    r = subprocess.run([sys.executable, "-m", "eqsat", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "check-rules" in r.stdout and "optimize" in r.stdout
    script = Path(sys.executable).parent / "eqsat"
    if not script.exists():
        pytest.skip("the console script is not installed in this environment (pip install -e .)")
    r = subprocess.run([str(script), "view", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "PLAN.pkl" in r.stdout


def test_cli_optimize_runs_checks_writes_the_page_and_saves(tmp_path):
    path = next(p for p in corpus_paths() if p.stem == "uncache_transpose")
    page, saved, again = tmp_path / "v.html", tmp_path / "plan.pkl", tmp_path / "again.html"
    r = subprocess.run([sys.executable, "-m", "eqsat", "optimize", str(path), "--view", str(page), "--save",
                        str(saved)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout and "matmul" in r.stdout
    assert r.stderr == ""  # not a terminal: no progress display
    assert page.exists() and saved.exists()
    r = subprocess.run([sys.executable, "-m", "eqsat", "view", str(saved), "-o", str(again)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "uncache_transpose" in again.read_text(encoding="utf-8")


def test_cli_reports_bad_programs_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from eqsat import *\n\n@program\ndef p(x: f32['M']) -> f32['M']:\n    while True:\n"
                   "        pass\n    return x\n")
    r = subprocess.run([sys.executable, "-m", "eqsat", "optimize", str(bad)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2
    short_error(r.stderr, f"{bad}:5:")


# ------------------------------------------------------------------ optimize
def test_a_named_program_of_several_and_shapes_over_the_files(run_cli, files):
    f = files("two.py", TWO)
    rc, out, err = run_cli("optimize", f"{f}:second", "--shape", "M=8", "--target", "cpu")
    assert rc == 0, err
    assert "plan for second on cpu (M=8, N=3)" in out and "matmul + relu" in out and "OK" in out
    rc, out, err = run_cli("optimize", f"{f}:first", "--shapes", "M=5,N=2", "--extract", "greedy")
    assert rc == 0, err
    assert "(M=5, N=2)" in out



def test_a_dimension_only_the_result_names_is_checked(run_cli, files):
    """`-> f32["L"]` with L in no parameter: the check ran `reference` without the shapes
    and printed FAILED with status 1 for a correct plan (by a probe)."""
    f = files("autocorr.py", """from eqsat import *


@program
def autocorr(x: f32["N"]) -> f32["L"]:
    r = empty((L,))
    for l in range(L):
        s = 0.0
        for i in range(N - l):
            s += x[i] * x[i + l]
        r[l] = s
    return r
""")
    for backend in ("numpy", "triton"):
        rc, out, err = run_cli("optimize", f, "--shapes", "N=32,L=6", "--backend", backend)
        assert rc == 0 and "OK" in out and "FAILED" not in out, (backend, out, err)

def test_emit_triton_and_the_triton_backend(run_cli, files):
    f = files("one.py", ONE)
    rc, out, err = run_cli("optimize", f, "--emit", "triton", "--backend", "triton")
    assert rc == 0, err
    assert "ran on triton" in out and "OK" in out
    assert "@triton.jit" in out and "def k0_matmul(" in out and "tl.dot" in out


def test_emit_ptx_prints_each_kernel_or_says_in_one_line_why_not(run_cli, files):
    f = files("one.py", ONE)
    rc, out, err = run_cli("optimize", f, "--emit", "ptx", "--no-check")
    if rc == 0:
        assert ".target sm_90" in out and "k0_matmul" in out
    else:
        assert rc == 1
        short_error(err, "cannot compile PTX", lines=1)


def test_a_wrong_plan_is_a_mismatch_with_status_1(run_cli, files, monkeypatch):
    # the probe check off (conftest), an unsound rule gets through to the plan: the run says so
    monkeypatch.setenv("EQSAT_CHECK_RULES", "0")
    rule = files("relu_is_identity.py", UNSOUND["relu_is_identity"])
    f = files("p.py", "from eqsat import *\nSHAPES = {'M': 16}\n\n@program\ndef p(x: f32['M']) -> f32['M']:\n"
                      "    return relu(x)\n")
    rc, out, err = run_cli("optimize", f, "--rules", f"all,{rule}")
    assert rc == 1, (out, err)
    assert "MISMATCH" in out


def test_an_unsound_rule_file_in_optimize_is_one_line(run_cli, files, monkeypatch):
    monkeypatch.setenv("EQSAT_CHECK_RULES", "1")
    rulecheck._CHECKED.clear()
    rule = files("relu_is_identity.py", UNSOUND["relu_is_identity"])
    f = files("one.py", ONE)
    try:
        rc, out, err = run_cli("optimize", f, "--rules", f"inline,{rule}")
    finally:
        rulecheck._CHECKED.clear()
    assert rc == 2
    short_error(err, "relu_is_identity.py", "unsound", "check-rules", lines=1)


@pytest.mark.skipif(not hasattr(api.Plan, "why_not"), reason="Plan.why_not has not landed")
def test_expect_prints_why_not_and_fails_when_not_chosen(run_cli, files):
    f = files("one.py", ONE)
    rc, out, err = run_cli("optimize", f, "--no-check", "--expect", "matmul+add+relu")
    assert rc == 0, err
    assert "matmul+add+relu: chosen" in out
    rc, out, err = run_cli("optimize", f, "--no-check", "--expect", "matmul+gelu")
    assert rc == 1, err
    assert "matmul+gelu:" in out and "matmul+gelu: chosen" not in out
    rc, out, err = run_cli("optimize", f, "--no-check", "--expect", "frobnicate")
    assert rc == 2
    short_error(err, "frobnicate", lines=1)


def test_progress_is_shown_on_a_terminal_only(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    with cli.progress("optimizing p", delay=0.05):
        time.sleep(0.4)
    assert "optimizing p" in tty.getvalue() and " s" in tty.getvalue()
    quiet = Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    with cli.progress("optimizing q", delay=5.0):  # done before the delay: nothing shown
        pass
    assert quiet.getvalue() == ""
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    with cli.progress("optimizing r", delay=0.0):
        time.sleep(0.2)
    assert pipe.getvalue() == ""


def test_inputs_too_large_to_run_are_not_run(run_cli, files):
    f = files("two.py", TWO)
    rc, out, err = run_cli("optimize", f"{f}:first", "--shapes", "M=65536,N=65536")
    assert rc == 0, err
    assert "not run" in out and "--no-check" in out


# ------------------------------------------------------------------ bad input: status 2, one line
def _bad_inputs(tmp: Path) -> list:
    (tmp / "folder").mkdir()
    (tmp / "afile").write_text("")
    (tmp / "syntax.py").write_text("from eqsat import *\n\n@program\ndef p(x: f32['M']) -> f32['M']\n    return x\n")
    (tmp / "raises.py").write_text("from eqsat import *\nimport math\n\nX = math.sqrt(-1)\n")
    (tmp / "two.py").write_text(TWO)
    (tmp / "one.py").write_text(ONE)
    (tmp / "oob.py").write_text("from eqsat import *\nSHAPES = {'N': 4}\n\n@program\n"
                                "def shift(x: f32['N']) -> f32['N']:\n    y = empty((N,))\n"
                                "    for i in range(N):\n        y[i] = x[i + 1]\n    return y\n")
    (tmp / "norule.py").write_text("X = 1\n")
    t = str(tmp)
    return [
        # (arguments, words stderr must hold)
        (["optimize", f"{t}/missing.py"], ["missing.py", "no such file"]),
        (["optimize", f"{t}/folder"], ["folder", "directory"]),
        (["optimize", f"{t}/syntax.py"], [f"{t}/syntax.py:4", "syntax error"]),
        (["optimize", f"{t}/raises.py"], [f"{t}/raises.py:4", "ValueError", "math domain error"]),
        (["optimize", f"{t}/one.py", "--shapes", "M=abc"], ["M=abc", "not an integer"]),
        (["optimize", f"{t}/one.py", "--shapes", "M"], ["'M'", "NAME=SIZE"]),
        (["optimize", f"{t}/one.py", "--shapes", "M=4,,N=3"], ["M=4,,N=3", "empty entry"]),
        (["optimize", f"{t}/one.py", "--shape", f"M={2**62 + 1}"], ["M=", "too large", "2**62"]),
        (["optimize", f"{t}/one.py", "--shape", "Q=3"], ["no dimension Q", "M, N"]),
        (["optimize", f"{t}/one.py", "--shape", "M=-3"], ["'M'", "non-negative"]),  # eqsat's ArgumentError
        (["optimize", f"{t}/one.py", "--rules", ""], ["--rules", "names no rule family"]),  # (ran with no rules)
        (["optimize", f"{t}/one.py", "--rules", ","], ["--rules", "names no rule family"]),
        (["optimize", f"{t}/one.py", "--expect", ""], ["--expect", "pattern"]),  # (accepted, status 0)
        (["optimize", f"{t}/one.py", "--expect", "matmull"], ["--expect", "'matmull'"]),  # (said after optimizing)
        (["optimize", f"{t}/one.py", "--view", f"{t}/afile/out.html"], ["afile/out.html", "cannot write"]),
        (["optimize", f"{t}/one.py", "--save", f"{t}/folder"], ["folder", "directory"]),
        (["optimize", f"{t}/one.py", "--view", ""], ["--view", "empty file name"]),  # (wrote nothing, status 0)
        (["optimize", f"{t}/two.py:third"], ["third", "first, second"]),
        (["optimize", f"{t}/two.py"], ["2 programs", "first, second", "two.py:first"]),
        (["optimize", f"{t}/oob.py"], [f"{t}/oob.py:8", "outside"]),  # eqsat's bounds error, file:line
        (["optimize", f"{t}/one.py", "--rules", "inline,nosuch"], ["nosuch", "rule family"]),
        (["optimize", f"{t}/one.py", "--target", "tpu"], ["tpu", "invalid choice"]),
        (["view", f"{t}/one.py", "-o", f"{t}/x.html"], ["one.py", "not a plan saved"]),
        (["view", f"{t}/missing.pkl", "-o", f"{t}/x.html"], ["missing.pkl", "no such file"]),
        (["check-rules", f"{t}/missing.py"], ["missing.py", "no such file"]),
        (["check-rules", f"{t}/norule.py"], ["norule.py", "must define `ruleset`"]),
        (["check-rules", f"{t}/folder"], ["folder", "no rule file"]),
        (["check-rules", f"{t}/syntax.py"], [f"{t}/syntax.py:4", "syntax"]),
        (["frobnicate"], ["invalid choice"]),
    ]


# one id per case of _bad_inputs, in its order
BAD_IDS = ["missing", "directory", "syntax", "raises", "shape-abc", "shape-no-size", "shape-empty", "shape-huge",
           "shape-unknown", "shape-negative", "rules-empty", "rules-comma", "expect-empty", "expect-unreadable",
           "view-unwritable", "save-directory", "view-empty", "unknown-function",
           "two-programs", "out-of-bounds", "unknown-rules", "unknown-target", "view-not-a-plan",
           "view-missing", "check-missing", "check-no-ruleset", "check-empty-folder", "check-syntax",
           "unknown-command"]


@pytest.mark.parametrize("case", range(len(BAD_IDS)), ids=BAD_IDS)
def test_bad_input_is_one_line_and_status_2(run_cli, tmp_path, case):
    cases = _bad_inputs(tmp_path)
    assert len(cases) == len(BAD_IDS)
    args, words = cases[case]
    rc, out, err = run_cli(*args)
    assert rc == 2, (args, out, err)
    short_error(err, *words)


def test_a_saved_plan_of_a_file_gone_is_one_line(run_cli, files, tmp_path):
    f = files("one.py", ONE)
    saved = tmp_path / "p.pkl"
    rc, out, err = run_cli("optimize", f, "--no-check", "--save", saved)
    assert rc == 0, err
    recipe = pickle.loads(saved.read_bytes())
    assert recipe["function"] == "lin" and recipe["shapes"] == {"M": 6, "K": 5, "N": 4}
    os.remove(f)
    rc, out, err = run_cli("view", saved, "-o", tmp_path / "x.html")
    assert rc == 2
    short_error(err, "one.py", "no longer exists")


def test_view_refuses_a_pickle_that_would_run_code(run_cli, tmp_path):
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps(os.getcwd))  # a global: loading it would import and call things
    rc, out, err = run_cli("view", evil, "-o", tmp_path / "x.html")
    assert rc == 2
    short_error(err, "evil.pkl", "not a plan saved")


# ------------------------------------------------------------------ check-rules
def test_check_rules_shipped_families_are_sound(run_cli):
    rc, out, err = run_cli("check-rules", REPO / "rules")
    assert rc == 0, (out, err)
    for family in ("matmul", "epilogue", "transpose", "inline"):
        assert f"rules/{family}.py: sound on" in out, out
    assert "support rules, always run" in out  # analysis.py, sanity.py
    assert "UNSOUND" not in out


@pytest.mark.parametrize("name", sorted(UNSOUND))
def test_check_rules_reports_each_unsound_rule_file(run_cli, files, name):
    path = files(f"{name}.py", UNSOUND[name])
    rc, out, err = run_cli("check-rules", path)
    assert rc == 1, (out, err)
    assert f"{path}: UNSOUND" in out and "probe program" in out
    assert "Traceback" not in err


def test_check_rules_says_an_ungrounded_variable_is_bad_input(run_cli, files):
    """A variable only the right-hand side names: egglog refuses the rule when it is built.
    check-rules called that UNSOUND, exit 1, and cut egglog's message at its first line
    ("EggSmolError: At 0:0 of", a probe's, session 27); it is bad input (exit 2) with the
    whole message, as optimize(rules=) says."""
    path = files("ungrounded.py", "from egglog import rewrite, ruleset\nfrom eqsat.sorts import Sc\n\n\n"
                                  "@ruleset\ndef ruleset(x: Sc, y: Sc):\n    yield rewrite(Sc.mul(x, x)).to(Sc.mul(x, y))\n")
    rc, out, err = run_cli("check-rules", path)
    assert rc == 2, (out, err)
    assert f"{path}: egglog cannot use its rules" in err and "Unbound symbol" in err, err
    assert "UNSOUND" not in out and "Traceback" not in err


def test_check_rules_on_a_folder_with_sound_and_unsound_files(run_cli, tmp_path):
    (tmp_path / "commute.py").write_text(SOUND)
    (tmp_path / "relu_is_identity.py").write_text(UNSOUND["relu_is_identity"])
    (tmp_path / "helpers.py").write_text("X = 1\n")  # no `ruleset`: not a rule file
    rc, out, err = run_cli("check-rules", tmp_path)
    assert rc == 1, (out, err)
    assert "commute.py: sound on" in out and "relu_is_identity.py: UNSOUND" in out
    assert "helpers.py" not in out
    assert "2 rule files: 1 sound on the probes, 1 unsound" in out


def test_check_rules_counts_matches_and_growth(run_cli):
    rc, out, err = run_cli("check-rules", SILU_RULE, "-v")
    assert rc == 0, (out, err)
    assert f"{SILU_RULE}: sound on" in out
    assert "2 of 2 rules matched on the probes" in out and "silu_rule.py.0: Sc.mul -> Sc.fn" in out
    assert "e-nodes with it" in out and "without" in out and "activations:" in out


AC_RULES = '''
from egglog import rewrite, ruleset
from eqsat.sorts import Sc

@ruleset
def ruleset(a: Sc, b: Sc, c: Sc):
    yield rewrite(Sc.add(a, b)).to(Sc.add(b, a))
    yield rewrite(Sc.add(Sc.add(a, b), c)).to(Sc.add(a, Sc.add(b, c)))
'''

LONG_SUM = '''from eqsat import *
SHAPES = {"N": 8}


@program
def long_sum(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"], f: f32["N"]) -> f32["N"]:
    return a + b + c + d + e + f + a * b + c * d + e * f + a * c + b * d + e * a
'''


def test_check_rules_warns_about_rules_that_blow_up(run_cli, files):
    rules, prog = files("ac.py", AC_RULES), files("long_sum.py", LONG_SUM)
    rc, out, err = run_cli("check-rules", rules, "--programs", prog)
    assert rc == 0, (out, err)
    assert "on 1 program" in out
    assert "warning: on long_sum the e-graph grew to" in out and "rule set of their own" in out


def test_rulecheck_examine_keeps_check_working(tmp_path):
    """The longer report does not change `check`, which optimize() calls."""
    path = tmp_path / "commute.py"
    path.write_text(SOUND)
    from eqsat.rules import FAMILIES

    (family, rs, _), = api.resolve_rules([str(path)])
    rep = rulecheck.examine(str(path), family, list(FAMILIES) + [str(path)], list(FAMILIES), ruleset=rs)
    assert rep.sound and rep.rules and all(name.startswith("commute.py.") for name in rep.rules)
    assert len(rep.stats) == len(rulecheck._probes()) and all(s.growth for s in rep.stats)


def test_a_negative_seed_or_a_tolerance_that_is_no_positive_number_is_a_usage_error(run_cli, files):
    """`--seed -5` was an internal error (exit 3) and `--tolerance nan` a MISMATCH (a probe)."""
    path = files("one.py", ONE)
    for flag, value in (("--seed", "-5"), ("--tolerance", "nan"), ("--tolerance", "-1")):
        rc, out, err = run_cli("optimize", path, flag, value)
        assert rc == 2, (flag, value, rc, err)
        short_error(err, flag, lines=3)
