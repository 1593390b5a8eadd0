"""Run every benchmark in bench/ in turn; each prints its table and saves JSON in bench/results/."""
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
for script in sorted(HERE.glob("*_bench.py")):
    print(f"\n=== {script.name}")
    sys.argv = [str(script)]
    runpy.run_path(str(script), run_name="__main__")
