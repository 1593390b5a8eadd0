"""Helpers shared by the benchmarks: the corpus, the machine, saving results."""
from __future__ import annotations

import importlib.util
import json
import os
import platform
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def corpus_dir() -> Path:
    shared = ROOT.parent / "shared" / "corpus"
    return shared if shared.is_dir() else ROOT / "tests" / "corpus"


def load_cases():
    from eqsat.ir import Program

    out = []
    for path in sorted(corpus_dir().glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        prog = next(v for v in vars(mod).values() if isinstance(v, Program))
        out.append((path.stem, mod, prog))
    return out


def machine() -> dict:
    return {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform()}


def save(name: str, data: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {"benchmark": name, "when": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine(), **data}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2))
    return path
