"""The viewer page: driven in a real headless Chromium, and checked as text without one.

The browser is Debian's Chromium (`apt-get install chromium`; .ci/run installs it), driven
by Playwright's Python client pointed at that binary (Playwright's own browser download
is never used). Outside CI, a machine without either skips the browser tests; in CI
(`CI` set) a missing browser fails them.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path

import pytest

import eqsat
from conftest import corpus_paths, load_case
from eqsat.ir import Program

POLYBENCH = Path(__file__).resolve().parent / "polybench"
# as root and on a closed network: no sandbox, and none of Chromium's background fetches
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


# ------------------------------------------------------------------ plans
@functools.cache
def corpus_plan(stem: str):
    mod, prog = load_case(next(p for p in corpus_paths() if p.stem == stem))
    return eqsat.optimize(prog, mod.SHAPES)


@functools.cache
def polybench_plan(name: str):
    spec = importlib.util.spec_from_file_location(f"viewer_polybench_{name}", POLYBENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    prog = next(v for v in vars(mod).values() if isinstance(v, Program))
    return eqsat.optimize(prog, mod.SHAPES)


HOSTILE = '''
from eqsat import f32, program


@program
def hostile_doc(x: f32["N"]) -> f32["N"]:
    """Tricky text: </script><script>alert("doc")</script> <!-- & </SCRIPT> ]]> \\u2028"""
    y = x + x
    return y
'''


def hostile_plan(tmp_path):
    path = tmp_path / "hostile_doc.py"
    path.write_text(HOSTILE)
    _, prog = load_case(path)
    return eqsat.optimize(prog, {"N": 8})


def embedded_data(page: str) -> dict:
    m = re.search(r"<script type='application/json' id=page-data>(.*?)</script>", page, re.DOTALL)
    assert m, "the page embeds its data in one JSON block"
    return json.loads(m.group(1))


# ------------------------------------------------------------------ without a browser
def test_page_embeds_user_text_safely_and_stays_offline(tmp_path):
    plan = hostile_plan(tmp_path)
    page = Path(plan.view(tmp_path / "plan.html")).read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    # the docstring's </script> never closes a script element: only the page's two do
    assert page.lower().count("</script") == 2
    assert '<script>alert("doc")' not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(&quot;doc&quot;)" in page  # shown, escaped, in the source
    data = embedded_data(page)
    assert '</script><script>alert("doc")</script>' in data["source"]  # and intact in the data
    assert data["program"] == "hostile_doc"
    # offline: nothing is fetched, no address of any kind
    assert not re.search(r"https?:|//[\w.-]+\.\w", page)
    assert not re.search(r"""\b(src|href)\s*=\s*["']?(?!#)""", page)
    assert "@import" not in page and "url(" not in page and "<link" not in page


def test_page_renders_without_the_optional_records(tmp_path):
    """A plan without the e-graph view, provenance or round records still renders, saying so."""
    import copy

    plan = copy.copy(corpus_plan("linear_bias_relu"))
    plan.egraph_view = None
    plan.provenance = None
    plan.report = copy.copy(plan.report)
    plan.report.rounds = None
    plan.report.rule_matches = None
    page = Path(plan.view(tmp_path / "plan.html")).read_text(encoding="utf-8")
    assert page.count("not recorded") >= 3
    assert embedded_data(page)["egraph"] is None


# ------------------------------------------------------------------ the browser
def chromium_path() -> str | None:
    for p in (os.environ.get("EQSAT_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser",
              shutil.which("chromium"), shutil.which("google-chrome")):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def unavailable(what: str):
    if os.environ.get("CI"):
        pytest.fail(f"{what}: CI must run the browser tests (.ci/run installs chromium and playwright)")
    pytest.skip(f"{what}: browser tests skipped (not under CI)")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install -e '.[test]')")
    exe = chromium_path()
    if exe is None:
        unavailable("no Chromium binary found (apt-get install chromium, or set EQSAT_CHROMIUM)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS)
        yield b
        b.close()


class Page:
    """One loaded viewer page, with every console error, page error and dialog it raised."""

    def __init__(self, browser, path: Path):
        self.errors: list = []
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.on("request", lambda r: r.url.startswith("file:") or self.errors.append(f"request: {r.url}"))
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")

    def close(self):
        self.page.close()


@pytest.fixture
def open_page(browser):
    pages = []

    def load(path):
        pages.append(Page(browser, path))
        return pages[-1]

    yield load
    for p in pages:
        p.close()


def save_screenshot(page, tmp_path, name: str) -> Path:
    out = tmp_path / name
    page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 0
    artifacts = os.environ.get("EQSAT_ARTIFACTS")
    if artifacts:
        os.makedirs(artifacts, exist_ok=True)
        shutil.copy(out, Path(artifacts) / name)
    return out


def test_viewer_in_a_browser_explains_the_chosen_form(open_page, tmp_path):
    plan = corpus_plan("linear_bias_relu")
    assert plan.egraph_view, "the plan records the e-graph around its chosen form"
    v = open_page(Path(plan.view(tmp_path / "plan.html")))
    page = v.page
    assert v.errors == []

    # the roots are open, with the chosen e-node highlighted
    chosen = page.locator("#egraph tr.chosen")
    assert chosen.count() >= 1
    assert chosen.first.is_visible()
    assert chosen.first.evaluate("e => getComputedStyle(e).backgroundColor") not in ("rgba(0, 0, 0, 0)", "transparent")
    root = plan.egraph_view["classes"][plan.egraph_view["roots"][0]]
    assert root["nodes"][root["chosen"]]["op"] in chosen.first.inner_text()

    # a kernel's detail: its code, its cost and the term that binds, its source lines
    k = plan.kernels[0]
    page.click(f"[data-kernel='{k.name}']")
    detail = page.locator("#kernel-detail")
    text = detail.inner_text()
    assert k.name in text
    assert f"{k.cost * 1e6:.3f} us" in text
    assert f"def {k.name}(" in detail.locator(".kernel-code").inner_text()  # its Triton kernel
    assert "binds" in text and detail.locator("svg").count() == 1  # the breakdown and the roofline
    # the vectorization report: every access of the kernel, with its width and why
    vec_rows = detail.locator("table.vectors tr")
    assert vec_rows.count() == 1 + len([r for r in plan.vectorization() if r.kernel == k.name])
    assert "operand a" in detail.locator("table.vectors").inner_text()
    assert page.locator("#source .src-line.hl").count() > 0
    assert page.locator(f"[data-kernel='{k.name}'].selected").count() == 1

    # search filters the e-classes by op
    boxes = page.locator("#egraph details.eclass")
    total = boxes.count()
    want = sum(any("ten.matmul" in n["op"].lower() for n in c["nodes"]) for c in plan.egraph_view["classes"].values())
    assert 0 < want < total
    page.fill("#egraph-search", "Ten.matmul")
    visible = page.locator("#egraph details.eclass:not([hidden])")
    assert visible.count() == want
    for i in range(visible.count()):
        assert "Ten.matmul" in visible.nth(i).inner_text()
    page.fill("#egraph-search", "")
    assert page.locator("#egraph details.eclass:not([hidden])").count() == total

    # a class id in a node's arguments opens that class
    link = page.locator("#egraph details.eclass[open] a.goto").first
    target = link.get_attribute("data-goto")
    link.click()
    box = page.locator(f"#egraph details.eclass[data-class='{target}']")
    assert box.evaluate("e => e.open") and box.locator("table.enodes").count() == 1

    assert v.errors == []
    save_screenshot(page, tmp_path, "viewer_linear_bias_relu.png")


def test_viewer_in_a_browser_for_a_kept_loop_nest(open_page, tmp_path):
    plan = polybench_plan("floyd_warshall")
    loops = [k for k in plan.kernels if k.kind == "loop"]
    assert loops, "floyd_warshall keeps its loop nest"
    v = open_page(Path(plan.view(tmp_path / "plan.html")))
    page = v.page
    k = loops[0]
    page.click(f"[data-kernel='{k.name}']")
    text = page.locator("#kernel-detail").inner_text()
    assert plan.lowered.nests[k.nest].reason in text
    assert f"{k.cost * 1e6:.3f} us" in text
    assert "for k in range(N)" in page.locator("#kernel-detail .kernel-code").inner_text()
    assert page.locator("#egraph tr.chosen").first.is_visible()
    assert v.errors == []
    save_screenshot(page, tmp_path, "viewer_floyd_warshall.png")


def test_hostile_docstring_runs_no_script_in_the_browser(open_page, tmp_path):
    plan = hostile_plan(tmp_path)
    v = open_page(Path(plan.view(tmp_path / "plan.html")))
    assert '</script><script>alert("doc")</script>' in v.page.locator("#source").inner_text()
    assert v.errors == []  # no dialog opened, nothing thrown, nothing fetched


def synthetic_egraph(n_classes: int) -> dict:
    """A chain of e-classes, each with a chosen node and two costlier alternatives; every
    tenth one also holds a `Ten.special` node."""
    classes = {}
    for i in range(n_classes):
        child = [{"class": f"Ten-{i + 1}"}] if i + 1 < n_classes else [{"text": "x"}]
        nodes = [{"op": "Ten.compute", "args": child, "cost": 2e-6, "chosen": True, "rules": ["as written"]},
                 {"op": "Ten.matmul", "args": child, "cost": 3e-6, "chosen": False, "rules": ["matmul.8: a -> b"]},
                 {"op": "Ten.fused", "args": child, "cost": None, "chosen": False, "rules": []}]
        if i % 10 == 0:
            nodes.append({"op": "Ten.special", "args": [], "cost": 5e-6, "chosen": False, "rules": []})
        classes[f"Ten-{i}"] = {"sort": "Ten", "chosen": 0, "nodes": nodes}
    return {"roots": ["Ten-0"], "classes": classes, "shown": n_classes, "total": n_classes + 100}


def test_viewer_stays_usable_at_hundreds_of_classes(open_page, tmp_path):
    import copy

    plan = copy.copy(corpus_plan("linear_bias_relu"))
    plan.egraph_view = synthetic_egraph(400)
    v = open_page(Path(plan.view(tmp_path / "plan.html")))
    page = v.page
    assert page.locator("#egraph details.eclass").count() == 400
    # collapsed by default and rendered lazily: only the root's nodes are in the page
    assert page.locator("#egraph table.enodes").count() == 1
    assert page.locator("#egraph tr.chosen").first.is_visible()
    assert "+1.000 us (1.50x)" in page.locator("#egraph details.eclass[open]").inner_text()
    page.fill("#egraph-search", "ten.special")
    assert page.locator("#egraph details.eclass:not([hidden])").count() == 40
    page.fill("#egraph-search", "Ten-399")
    assert page.locator("#egraph details.eclass:not([hidden])").count() == 1
    page.fill("#egraph-search", "")
    page.locator("#egraph details.eclass[data-class='Ten-0'] a.goto").first.click()
    assert page.locator("#egraph details.eclass[data-class='Ten-1']").evaluate("e => e.open")
    assert page.locator("#egraph table.enodes").count() == 2
    assert v.errors == []
