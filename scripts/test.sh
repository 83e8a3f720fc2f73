#!/usr/bin/env bash
# Install everything (scripts/setup.sh), then run the whole test suite offline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# One BLAS/torch thread: the suite's model calls are tiny, and on 2 shared cores two threads
# per call contend with the test database server (measured 30-50x slower under load).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
