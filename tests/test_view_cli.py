"""The viewer page (the command line is tests/test_cli.py)."""
from __future__ import annotations

import re

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


def test_view_refuses_a_path_that_is_no_file_name(tmp_path):
    """`plan.view(True)` once wrote to file descriptor 1 and closed stdout; a directory, an
    empty name or a missing directory gave bare OSErrors."""
    import pytest

    path = next(p for p in corpus_paths() if p.stem == "matmul_plain")
    mod, prog = load_case(path)
    plan = eqsat.optimize(prog, mod.SHAPES)
    for bad, msg in ((True, "file name"), (1, "file name"), ("", "file name"), (tmp_path, "directory"),
                     (tmp_path / "no" / "p.html", "does not exist")):
        with pytest.raises(eqsat.ArgumentError, match=msg):
            plan.view(bad)
    assert plan.view(str(tmp_path / "p.html")).endswith("p.html")
