"""Arize Phoenix for the tests: the trace viewer started from its cached venv (`.venv/phoenix`, made by
scripts/test.sh) on free ports with a working folder of its own, and the spans read back through its
REST API."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .daemon import ROOT
from .llama import free_port

PHOENIX = ROOT / ".venv" / "phoenix" / "bin" / "phoenix"
SETUP_HINT = "./scripts/test.sh installs arize-phoenix into .venv/phoenix"
READY_TIMEOUT_SEC = 120.0  # Phoenix answers /healthz in about 20 s
PAGE = 1000  # spans per REST request


@dataclass(frozen=True)
class Phoenix:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as answer:
            return json.loads(answer.read())

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span of `project` (none while the project does not exist yet)."""
        names = {p["name"] for p in self._get("/v1/projects")["data"]}
        if project not in names:
            return []
        spans: list[dict[str, Any]] = []
        cursor = ""
        while True:
            page = self._get(f"/v1/projects/{project}/spans?limit={PAGE}{cursor}")
            spans += page["data"]
            if not page.get("next_cursor"):
                return spans
            cursor = f"&cursor={page['next_cursor']}"


def start_phoenix(workdir: Path) -> Phoenix:
    if not PHOENIX.is_file():
        pytest.fail(f"{PHOENIX} is missing: {SETUP_HINT}")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_HOST": "127.0.0.1",
    }
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    phoenix = Phoenix(process, port)
    deadline = time.monotonic() + READY_TIMEOUT_SEC
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(phoenix.url + "/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return phoenix
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    process.kill()
    pytest.fail(f"Phoenix did not answer /healthz within {READY_TIMEOUT_SEC:g} s: see {workdir}/phoenix.log")
