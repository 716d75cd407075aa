"""An ACP client for the tests: the official SDK's client side driving `python -m mini_agent acp` over
real stdio, recording every session/update and answering permission requests as a test says."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from .daemon import ROOT, daemon_env

AGENT = (sys.executable, "-m", "mini_agent", "acp")


def dump(model: Any) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return out


@dataclass
class Recorder:
    """The client side's callbacks (the SDK's `Client` protocol)."""

    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    answer: Callable[[dict[str, Any]], str | None] | None = None  # an optionId, or None for `cancelled`
    buffers: dict[str, str] = field(default_factory=dict)  # the editor's open files, by absolute path

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, dump(update)))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        options_json = [dump(option) for option in options]
        request = {"sessionId": session_id, "toolCall": dump(tool_call), "options": options_json}
        self.permission_requests.append(request)
        choice = self.answer(request) if self.answer is not None else None
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self.buffers[path] = content
        return WriteTextFileResponse()

    def of(self, session_id: str) -> list[dict[str, Any]]:
        return [u for sid, u in self.updates if sid == session_id]

    def kinds(self, session_id: str) -> list[str]:
        return [u["sessionUpdate"] for u in self.of(session_id)]


@asynccontextmanager
async def acp_agent(
    cwd: Path, *, fs: bool = False, trust: bool = False, **env: str
) -> AsyncIterator[tuple[Any, Any, Recorder]]:
    """A running agent, initialized; yields (connection, process, recorder)."""
    recorder = Recorder()
    command = (*AGENT, "--trust") if trust else AGENT
    async with spawn_agent_process(
        recorder, *command, env=daemon_env(**env), cwd=cwd, transport_kwargs={"stderr": None}
    ) as (conn, process):
        caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
        await conn.initialize(protocol_version=1, client_capabilities=caps)
        yield conn, process, recorder


def text(words: str) -> list[Any]:
    return [text_block(words)]


def workspace_config(root: Path, base_url: str, **extra: str) -> None:
    """The example workspace's tools and the scripted model, as the workspace file says them."""
    lines = ["[tool.mini-agent]", extra.pop("tools", 'tools = ["tools.py"]'), *extra.values()]
    lines.append("[tool.mini-agent.llm]")
    lines += [f'base_url = "{base_url}"', 'model = "replay"']
    (root / "pyproject.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def calls(updates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each tool call's updates, by toolCallId, in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for update in updates:
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            out.setdefault(update["toolCallId"], []).append(update)
    return out


def said(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)


ACPX = ROOT / ".venv" / "acpx" / "node_modules" / "acpx" / "dist" / "cli.js"


async def run_acpx(
    workspace: Path, home: Path, *args: str, agent: str = "mini-agent acp --trust",
    env: dict[str, str] | None = None,
) -> tuple[int, list[dict[str, Any]], str]:
    """acpx (a headless ACP client) against `agent` (`mini-agent acp --trust` from this checkout by
    default) in `workspace`, with `args` (e.g. `exec PROMPT`): its exit code, its JSON event stream and
    its stderr. `env` replaces the environment the checkout's agent gets."""
    assert ACPX.is_file(), f"acpx is not installed at {ACPX}: run scripts/test.sh (it installs it)"
    bindir = str(Path(sys.executable).parent)  # where `mini-agent` is installed with the package
    if env is None:
        env = {**daemon_env(HOME=str(home)), "PATH": bindir + os.pathsep + os.environ["PATH"]}
    command = ["node", str(ACPX), "--agent", agent, "--format", "json", "--approve-all"]
    process = await asyncio.create_subprocess_exec(
        *command, "--cwd", str(workspace), *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    stream = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    return process.returncode, stream, err.decode()
