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
    *) echo "usage: bench/gpu_session.sh tests|bench [args]" >&2; exit 2 ;;
esac
