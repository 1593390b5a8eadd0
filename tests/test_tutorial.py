"""The README's tutorial, "a new rule, end to end", run as written: the rule file it shows
(eqsat/examples/silu_rule.py, compared with the README's copy) passes the check, makes the
epilogue of `h = x @ w; return h * sigmoid(h)` the one op `silu`, is named by explain(),
and the plan computes what the program does.

`python tests/test_tutorial.py` renders the tutorial's viewer page and saves the
README's screenshot of it, docs/viewer.png (Playwright driving Debian's Chromium).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import eqsat
from conftest import assert_matches_reference
from eqsat import cli, rulecheck
from eqsat.examples.linear_silu import SHAPES, linear_silu
from eqsat.rules import FAMILIES

REPO = Path(__file__).resolve().parents[1]
RULE = REPO / "eqsat" / "examples" / "silu_rule.py"
PROGRAM = REPO / "eqsat" / "examples" / "linear_silu.py"
SECTION = "## Tutorial: a new rule, end to end"


def tutorial_section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert SECTION in text
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def tutorial_plan(**kw):
    return eqsat.optimize(linear_silu, SHAPES, rules=[*FAMILIES, str(RULE)], **kw)


def test_the_readme_shows_the_rule_file_and_the_program_as_they_are():
    blocks = re.findall(r"```python\n(.*?)```", tutorial_section(), re.DOTALL)
    assert RULE.read_text(encoding="utf-8") in blocks, "the README's copy of silu_rule.py differs from the file"
    program = PROGRAM.read_text(encoding="utf-8")
    shown = next(b for b in blocks if "def linear_silu" in b)
    assert shown.strip() in program, "the README's linear_silu differs from eqsat/examples/linear_silu.py"


def test_the_check_accepts_the_rule_and_its_probes_exercise_it(monkeypatch):
    monkeypatch.setenv("EQSAT_CHECK_RULES", "1")
    rulecheck._CHECKED.clear()
    try:
        rulecheck.check([(str(RULE), str(RULE))], list(FAMILIES))  # raises UnsoundRule if it is not
    finally:
        rulecheck._CHECKED.clear()
    (family, rs, _), = eqsat.api.resolve_rules([str(RULE)])
    rep = rulecheck.examine(str(RULE), family, [*FAMILIES, str(RULE)], list(FAMILIES), ruleset=rs)
    assert rep.sound and len(rep.rules) == 2
    assert all(n > 0 for n in rep.rules.values()), rep.rules  # both orders of the product occur in a probe


def test_without_the_rule_the_epilogue_is_mul_and_sigmoid():
    plan = eqsat.optimize(linear_silu, SHAPES)
    (k,) = plan.kernels
    assert k.kind == "matmul" and sorted(k.epilogue) == ["mul", "sigmoid"]


def test_with_the_rule_the_epilogue_is_silu_explained_and_correct():
    plan = tutorial_plan()
    assert "silu_rule.py" in plan.rules
    (k,) = plan.kernels
    assert k.kind == "matmul"
    assert k.epilogue == ["silu"], k.epilogue
    assert "silu" in str(plan)
    assert "silu_rule.py" in plan.explain()  # the rule that built the epilogue's silu
    assert_matches_reference(plan, linear_silu, SHAPES, tol=1e-5)
    assert_matches_reference(plan, linear_silu, SHAPES, seed=1, tol=1e-5)


def test_the_tutorials_commands(capsys):
    assert cli.main(["check-rules", str(RULE)]) == 0
    out = capsys.readouterr().out
    assert f"{RULE}: sound on" in out and "2 of 2 rules matched on the probes" in out
    args = ["optimize", str(PROGRAM), "--rules", f"all,{RULE}"]
    if hasattr(eqsat.api.Plan, "why_not"):
        args += ["--expect", "matmul+silu"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "matmul + silu" in out and "OK" in out


# ------------------------------------------------------------------ docs/viewer.png
def screenshot(out: Path = REPO / "docs" / "viewer.png", max_bytes: int = 300_000) -> Path:
    """Render the tutorial plan's viewer page in Chromium and save a PNG of it."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from test_viewer_browser import CHROMIUM_FLAGS, chromium_path

    exe = chromium_path()
    if exe is None:
        raise SystemExit("no Chromium binary found (apt-get install chromium, or set EQSAT_CHROMIUM)")
    plan = tutorial_plan()
    with tempfile.TemporaryDirectory() as d:
        page_path = Path(plan.view(Path(d) / "silu.html"))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.goto(page_path.resolve().as_uri())
            page.wait_for_load_state("load")
            page.click(f"[data-kernel='{plan.kernels[0].name}']")
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
            if out.stat().st_size > max_bytes:  # a smaller window
                page.set_viewport_size({"width": 1100, "height": 700})
                page.screenshot(path=str(out))
            browser.close()
    return out


if __name__ == "__main__":  # tests/ is on sys.path as the script's folder
    path = screenshot(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "viewer.png")
    print(f"{path}: {path.stat().st_size} bytes")
