#!/usr/bin/env bash
# What a session lent a CUDA machine runs there (the `device` tool of this workplace; any CUDA
# machine with python3, torch and triton will do). It installs eqsat's remaining
# dependencies from wheels carried in .whl/ (cp312 manylinux wheels, fetched here with
# `pip download --no-deps --only-binary=:all: --python-version 3.12 ...`: egglog, islpy, and
# what egglog imports that such a machine may lack: black, pytokens, platformdirs, graphviz,
# opentelemetry-api), then runs one of:
#   bench/gpu_session.sh tests [pytest args]   the test suite on the GPU (TRITON_INTERPRET=0: Triton compiled, not
#                                              interpreted; exact f32 dots, EQSAT_TRITON_PRECISION=ieee)
#   bench/gpu_session.sh bench [gpu_bench args] bench/gpu_bench.py (tf32 by default)
#   bench/gpu_session.sh check [gpu_check args] bench/gpu_check.py: every test program planned for
#                                              the GPU target and run through Triton, compiled
#   bench/gpu_session.sh all [seconds]          at once, each within `seconds` (default 420): the
#                                              suite on 10 xdist workers (the differential tests
#                                              apart), the check in 4 shards, and the
#                                              differential tests with both backends (SUITE=0: not
#                                              the suite; SHARDS=n; DIFF_EXAMPLES; EQSAT_DIFF_TIMEOUT)
# Logs go to $OUT when it is set (the device tool brings that folder back), else ./out.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -d .whl ] && ! python3 -c "import egglog, islpy" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton, egglog; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
what=${1:-tests}
shift || true
case "$what" in
    tests)
        TRITON_INTERPRET=0 EQSAT_TRITON_PRECISION=ieee python3 -m pytest -q -rf -p no:cacheprovider "$@" 2>&1 | tee "$OUT/tests.log" ;;
    bench)
        python3 bench/gpu_bench.py "$@" 2>&1 | tee "$OUT/gpu_bench.log"
        cp bench/results/gpu.json "$OUT/" 2>/dev/null ;;
    check)
        python3 bench/gpu_check.py "$@" 2>&1 | tee "$OUT/check.log" ;;
    all)
        limit=${1:-420}
        export TRITON_INTERPRET=0 EQSAT_TRITON_PRECISION=ieee
        diff="tests/test_differential.py tests/test_dataflow_diff.py"
        [ "${SUITE:-1}" = 0 ] || ( timeout "$limit" python3 -m pytest -q -rfE -p no:cacheprovider -n 10 \
              --dist loadfile --timeout 300 --ignore=tests/test_differential.py --ignore=tests/test_dataflow_diff.py \
              >"$OUT/tests.log" 2>&1
          echo "tests: exit status $?" >>"$OUT/tests.log" ) &
        ( EQSAT_DIFF_BACKENDS=numpy,triton EQSAT_DIFF_EXAMPLES=${DIFF_EXAMPLES:-150} timeout "$limit" \
              python3 -m pytest -q -rfE -p no:cacheprovider $diff >"$OUT/diff.log" 2>&1
          echo "differential: exit status $?" >>"$OUT/diff.log" ) &
        shards=${SHARDS:-4}
        for i in $(seq 0 $((shards - 1))); do
            ( timeout "$limit" python3 bench/gpu_check.py --shard "$i/$shards" --out "/tmp/gpu_check_$i.json" >"/tmp/gpu_check_$i.log" 2>&1
              echo "check shard $i: exit status $?" >>"/tmp/gpu_check_$i.log" ) &
        done
        wait
        cat /tmp/gpu_check_*.log >"$OUT/check.log"
        python3 - "$OUT/gpu_check.json" /tmp/gpu_check_*.json <<'PY'
import json, sys
parts = [json.load(open(p)) for p in sys.argv[2:]]
rows = [r for p in parts for r in p["rows"]]
counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "wrong", "error", "refused")}
json.dump({"device": parts[0]["device"], "target": parts[0]["target"], "counts": counts, "rows": rows},
          open(sys.argv[1], "w"), indent=1)
print("check:", counts)
PY
        tail -n 25 "$OUT/tests.log" 2>/dev/null; tail -n 30 "$OUT/diff.log"
        grep -E "exit status| (wrong|error) " "$OUT/check.log" ;;
    *) echo "usage: bench/gpu_session.sh tests|bench|check|all [args]" >&2; exit 2 ;;
esac
