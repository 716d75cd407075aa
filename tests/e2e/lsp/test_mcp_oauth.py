"""An OAuth-protected MCP server used from a session over the LSP door: a real daemon over stdio, the
real test server on the SDK's auth pieces (tests/support/oauth_mcp_server.py), a scripted model calling
its tool, and a client that "opens" the sign-in page by fetching it (the server approves at once and
redirects to the daemon's loopback listener)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient

from ...support.oauth import open_page, serving
from ...support.scripted import action

SHOW_DOCUMENT = {"window": {"showDocument": {"support": True}}}


class Browser:
    """The client's `window/showDocument`: records the request and follows the page's redirects."""

    def __init__(self, dawdle: float = 0) -> None:
        self.shown: list[dict[str, Any]] = []
        self.dawdle = dawdle  # seconds the person takes before opening the page

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.shown.append(params)
        await asyncio.sleep(self.dawdle)
        await open_page(params["uri"])
        return {"success": True}


async def run_session(
    root: Path, state: Path, url: str, browser: Browser, log: Path, tool: str = "whoami", **server: Any
) -> tuple[Any, list[Any]]:
    """One daemon, one session whose model calls the server's `tool`: the step and every message received."""
    received: list[Any] = []
    script = [action(f"oauth_{tool}", {}), {"content": "Final Answer: {last_observation}"}]
    server |= {"type": "http", "name": "oauth", "url": url, "requiresApproval": False}
    env = {**os.environ, "MINI_AGENT_STATE_DIR": str(state), "MINI_AGENT_LOG": "DEBUG"}
    with log.open("ab") as stderr:
        async with ReplayServer(script) as model:
            options = {"llm": {"baseUrl": model.base_url}, "store": {"enabled": True}}
            async with AgentClient.spawn(
                root=root,
                options=options,
                env=env,
                stderr=stderr.fileno(),
                capabilities=SHOW_DOCUMENT,
                handlers={"window/showDocument": browser},
                tap=lambda direction, message: received.append(message) if direction == "recv" else None,
            ) as client:
                session_id = await client.start_session("who am I?", mcp_servers=[server])
                for _ in script:  # the call, then the answer
                    step = await client.step(session_id)
    return step, received


def _files(folder: Path) -> Iterator[Path]:
    return (path for path in folder.rglob("*") if path.is_file())


@pytest.mark.asyncio
async def test_a_protected_server_signs_in_once_and_the_token_stays_private(tmp_path: Path) -> None:
    async with serving(tmp_path) as (url, issued):
        await signs_in_once(tmp_path, url, issued)


async def signs_in_once(tmp_path: Path, url: str, issued: Path) -> None:
    root, state, log = tmp_path / "ws", tmp_path / "state", tmp_path / "daemon.log"
    root.mkdir()
    first = Browser()
    step, received = await run_session(root, state, url, first, log)
    assert step["finalAnswer"].startswith("signed in"), step
    (shown,) = first.shown
    assert shown["external"] is True and shown["uri"].startswith(url.removesuffix("/mcp") + "/authorize?")

    (token_file,) = _files(state / "mcp-oauth")
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700

    second = Browser()  # a new daemon: the stored token is used, nobody is asked
    step, received_again = await run_session(root, state, url, second, log)
    assert step["finalAnswer"].startswith("signed in"), step
    assert second.shown == []

    tokens = issued.read_text().split()
    assert len(tokens) == 2  # one sign-in: one access token, one refresh token
    assert all(token in token_file.read_text() for token in tokens)
    wire = json.dumps(received + received_again)
    workspace = [path.read_bytes() for path in _files(root)]
    assert any(path.name.startswith("sessions.db") for path in _files(root))  # the store was written
    daemon_log = log.read_bytes()
    assert b"HTTP Request" in daemon_log  # the log did record the traffic
    for token in tokens:
        assert token not in wire
        assert token.encode() not in daemon_log
        assert not any(token.encode() in data for data in workspace)


@pytest.mark.asyncio
async def test_a_server_that_asks_for_no_sign_in_never_opens_a_page(tmp_path: Path) -> None:
    """An HTTP server that never answers 401 is used as it is: no page, no token file."""
    root = tmp_path / "ws"
    root.mkdir()
    browser = Browser()
    async with serving(tmp_path, "--open") as (url, _):
        step, _ = await run_session(root, tmp_path / "state", url, browser, tmp_path / "daemon.log")
    assert step["finalAnswer"].startswith("signed in"), step
    assert browser.shown == []
    assert not (tmp_path / "state" / "mcp-oauth").exists()


@pytest.mark.asyncio
async def test_a_revoked_token_leads_to_one_new_sign_in(tmp_path: Path) -> None:
    root, state, log = tmp_path / "ws", tmp_path / "state", tmp_path / "daemon.log"
    root.mkdir()
    async with serving(tmp_path) as (url, issued):
        first = Browser()
        step, _ = await run_session(root, state, url, first, log, tool="revoke_all")
        assert step["finalAnswer"].startswith("revoked"), step
        second = Browser()  # the stored token is refused: the person signs in once more
        step, _ = await run_session(root, state, url, second, log)
    assert step["finalAnswer"].startswith("signed in"), step
    assert (len(first.shown), len(second.shown)) == (1, 1)
    assert len(issued.read_text().split()) == 4  # two sign-ins, each an access and a refresh token


@pytest.mark.asyncio
async def test_a_server_refusing_every_token_fails_the_start_after_one_sign_in(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    browser = Browser()
    async with serving(tmp_path, "--reject") as (url, _):
        step, received = await run_session(root, tmp_path / "state", url, browser, tmp_path / "daemon.log")
    assert len(browser.shown) == 1
    assert "unknown tool 'oauth_whoami'" in step["finalAnswer"]
    said = json.dumps([m for m in received if m.get("method") == "agent/update"])
    assert "MCP server 'oauth' could not start" in said


@pytest.mark.asyncio
async def test_a_token_that_expired_between_daemons_is_refreshed_without_asking(tmp_path: Path) -> None:
    root, state, log = tmp_path / "ws", tmp_path / "state", tmp_path / "daemon.log"
    root.mkdir()
    async with serving(tmp_path, "--short-lived") as (url, issued):
        first = Browser()
        await run_session(root, state, url, first, log)
        signed_in = len(issued.read_text().split())
        second = Browser()  # a new daemon, the stored token past its second: refreshed, nobody asked
        step, received = await run_session(root, state, url, second, log)
    assert step["finalAnswer"].startswith("signed in"), step
    assert (len(first.shown), second.shown) == (1, [])
    tokens = issued.read_text().split()
    assert len(tokens) > signed_in  # the refresh issued new ones
    assert not any(token in json.dumps(received) or token.encode() in log.read_bytes() for token in tokens)


@pytest.mark.asyncio
async def test_the_start_bound_stops_while_the_person_signs_in(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    slow = Browser(dawdle=7.0)  # longer than the server's whole start bound
    async with serving(tmp_path) as (url, _):
        step, _ = await run_session(
            root, tmp_path / "state", url, slow, tmp_path / "daemon.log", startTimeoutSec=5
        )
    assert step["finalAnswer"].startswith("signed in"), step
