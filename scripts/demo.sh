#!/usr/bin/env bash
# Install (scripts/setup.sh), then run the offline demo over the bundled example graph.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec .venv/bin/kgrag demo "$@"
