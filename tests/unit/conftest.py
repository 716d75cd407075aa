"""The unit tier runs in one process with no network: a test here that starts a process (the daemon, a
tool host, anything) or opens a socket fails, naming itself and what it tried."""

from __future__ import annotations

import asyncio
import asyncio.base_events
import asyncio.subprocess
import os
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

SPAWNERS = ("fork", "forkpty", "posix_spawn", "posix_spawnp")


@pytest.fixture(autouse=True)
def no_process_no_socket(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    test = request.node.nodeid

    def refusing(what: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError(
                f"the unit test {test} called {what}: a unit test starts no process and opens no socket"
                " (it belongs in tests/integration or tests/e2e)"
            )

        return refuse

    monkeypatch.setattr(subprocess.Popen, "__init__", refusing("subprocess.Popen"))
    for name in SPAWNERS:
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refusing(f"os.{name}"))
    for module in (asyncio, asyncio.subprocess):
        for name in ("create_subprocess_exec", "create_subprocess_shell"):
            monkeypatch.setattr(module, name, refusing(f"asyncio.{name}"))
    for name in ("subprocess_exec", "subprocess_shell"):
        monkeypatch.setattr(asyncio.base_events.BaseEventLoop, name, refusing(f"loop.{name}"))
    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, refusing(f"socket.socket.{name}"))
    monkeypatch.setattr(socket, "getaddrinfo", refusing("socket.getaddrinfo"))
    yield
