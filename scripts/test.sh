#!/usr/bin/env bash
# Install everything (scripts/setup.sh), then check (ruff, mypy) and run the whole test suite
# offline. SKIP_CHECKS=1 runs pytest only (e.g. a quick local re-run of a few tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# One BLAS/torch thread: the suite's model calls are tiny, and on 2 shared cores two threads
# per call contend with the test database server (measured 30-50x slower under load).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
if [ "${SKIP_CHECKS:-0}" != "1" ]; then
    echo "ruff check ." && .venv/bin/ruff check .
    echo "mypy" && .venv/bin/mypy
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
