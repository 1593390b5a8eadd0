"""The viewer page and the command line."""
from __future__ import annotations

import re
import subprocess
import sys

import eqsat
from conftest import corpus_paths, load_case


def test_view_is_one_offline_page_with_the_kernels(tmp_path):
    path = next(p for p in corpus_paths() if p.stem == "linear_bias_relu")
    mod, prog = load_case(path)
    plan = eqsat.optimize(prog, mod.SHAPES)
    out = plan.view(tmp_path / "plan.html")
    html = open(out, encoding="utf-8").read()
    assert html.startswith("<!doctype html>")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "the page must work offline"
    assert "linear_bias_relu" in html
    assert "relu, add" in html or "add, relu" in html
    for k in plan.kernels:
        assert k.name in html
    assert "def linear_bias_relu" in html  # the program as written
    assert plan.report.stop_reason in html


def test_cli_optimize_runs_checks_and_writes_the_page(tmp_path):
    path = next(p for p in corpus_paths() if p.stem == "uncache_transpose")
    page = tmp_path / "v.html"
    r = subprocess.run([sys.executable, "-m", "eqsat", "optimize", str(path), "--view", str(page)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout and "matmul" in r.stdout
    assert page.exists()


def test_cli_reports_bad_programs_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from eqsat import *\n\n@program\ndef p(x: f32['M']) -> f32['M']:\n    while True:\n"
                   "        pass\n    return x\n")
    r = subprocess.run([sys.executable, "-m", "eqsat", "optimize", str(bad)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0
    assert f"{bad}:5:" in r.stderr and "Traceback" not in r.stderr
