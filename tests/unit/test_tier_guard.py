"""The unit tier's guard itself: what a unit test may not do fails it, naming the test."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys

import pytest
from mini_agent_client import AgentClient


@pytest.mark.asyncio
async def test_a_unit_test_that_spawns_the_daemon_fails() -> None:
    with pytest.raises(AssertionError, match="test_a_unit_test_that_spawns_the_daemon_fails"):
        async with AgentClient.spawn(root="."):
            pass


def test_a_unit_test_that_starts_a_process_fails() -> None:
    with pytest.raises(AssertionError, match="starts no process"):
        subprocess.Popen([sys.executable, "-c", "pass"])


def test_a_unit_test_that_opens_a_socket_fails() -> None:
    with socket.socket() as sock, pytest.raises(AssertionError, match="opens no socket"):
        sock.connect(("127.0.0.1", 9))
    with pytest.raises(AssertionError):
        asyncio.run(asyncio.open_connection("127.0.0.1", 9))
