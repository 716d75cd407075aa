"""What the LSP door announces in its `initialize` answer, derived without pygls.

The agent part (`capabilities.experimental.agent`: the methods, notifications and server requests of
the protocol) is ours. The rest is what pygls' `ServerCapabilitiesBuilder` derives from the features
`server.py` registers, re-derived here by hand from the two things the client says that change it: the
position encodings it offers and whether it would send willSave notifications. `boot.py` answers
`initialize` with `initialize_result` before pygls loads; `pygls_compat` checks each such answer against
the one pygls then computes and logs an error where they differ (`differences`).

Standard library only (and `core.contracts`, `app.trust`): boot imports this module before anything
else loads, and it imports neither `boot` nor `server`, which both import it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from mini_agent.app import trust
from mini_agent.core.contracts import TOOL_MODES
from mini_agent.plumbing.version import VERSION

PROTOCOL_VERSION = 1
METHODS = (
    "agent/registerTool",
    "agent/unregisterTool",
    "agent/listTools",
    "agent/startSession",
    "agent/prompt",
    "agent/step",
    "agent/run",
    "agent/cancel",
    "agent/approve",
    "agent/listSessions",
    "agent/getSession",
    "agent/getObservation",
    "agent/resumeSession",
    "agent/forkSession",
    "agent/loadSession",
    "agent/deleteSession",
    "agent/trustWorkspace",
    "agent/untrustWorkspace",
    "agent/listModels",
    "agent/configureSession",
    "agent/listCommands",
)
SERVER_NAME = "mini-agent"

_ENCODINGS = ("utf-8", "utf-16", "utf-32")  # what pygls supports; it takes the client's first of them


def agent_capabilities(
    trusted: dict[str, Any] | None = None, sandboxed: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`capabilities.experimental.agent` of the initialize answer (a fresh copy each time), with the
    workspace's `trust` (`trust_capability`) and the tool `sandbox` (`sandbox_capability`) when given."""
    return {
        **({"trust": trusted} if trusted is not None else {}),
        **({"sandbox": sandboxed} if sandboxed is not None else {}),
        "protocolVersion": PROTOCOL_VERSION,
        "methods": list(METHODS),
        "notifications": ["agent/update", "agent/toolsChanged"],
        "serverRequests": ["agent/requestPermission", "agent/executeTool", "agent/elicit"],
        "toolModes": list(TOOL_MODES),
    }


def initialize_result(params: Any) -> dict[str, Any] | None:
    """The `InitializeResult` pygls would give for these `initialize` params, as plain JSON; None where
    the params are not plain enough to say (pygls then answers, errors included)."""
    if not isinstance(params, dict) or not isinstance(params.get("initializationOptions", {}), dict | None):
        return None
    client = params.get("capabilities")
    if not isinstance(client, dict):
        return None
    encoding = _position_encoding(client)
    sync = _dig(client, "textDocument", "synchronization")
    if encoding is None or sync is None:
        return None
    text_sync: dict[str, Any] = {"openClose": True, "change": 2, "save": True}
    for key in ("willSave", "willSaveWaitUntil"):  # pygls says false to a client that offers them
        if sync.get(key):
            text_sync[key] = False
    capabilities = {
        "positionEncoding": encoding,
        "textDocumentSync": text_sync,
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True},
                      "fileOperations": {}},
        "experimental": {"agent": agent_capabilities(trust_capability(params), sandbox_capability(params))},
    }
    return {"capabilities": capabilities, "serverInfo": {"name": SERVER_NAME, "version": VERSION}}


def trust_capability(params: dict[str, Any]) -> dict[str, Any]:
    """`{trusted, remembered, needed, wouldRun}` for the workspace `params` name: `trusted` is the
    client's `workspaceTrusted` where it sends one (the editor's own workspace trust decides), else
    whether the user remembered this folder with what its workspace file names now (`app.trust`)."""
    options = params.get("initializationOptions") or {}
    try:
        root = _root(params)
        runs = trust.read_runs(root)
        status = trust.status(root, runs) if runs is not None else None
    except (OSError, RuntimeError):  # a folder that cannot be resolved: the daemon reports it
        status = None
    remembered = status is not None and status.remembered
    sent = options.get("workspaceTrusted") if isinstance(options, dict) else None
    return {
        "trusted": bool(sent) if sent is not None else remembered,
        "remembered": remembered,
        "needed": status is not None and status.needed,
        "wouldRun": status.would_run if status is not None else [],
    }


def sandbox_capability(params: dict[str, Any]) -> dict[str, Any]:
    """`{state, detail, landlockAbi}`: what this daemon's tool calls get (`tools.sandbox.state`), so
    an editor's health check and status can show it."""
    from mini_agent.app import user_settings
    from mini_agent.tools import sandbox

    options = params.get("initializationOptions") or {}
    tools = options.get("tools") if isinstance(options, dict) else None
    asked = tools.get("sandbox") if isinstance(tools, dict) else None
    if asked is None:  # the user's own settings decide below the editor's (`app.user_settings`)
        asked = user_settings.sandbox_choice()
    state, detail = sandbox.state(turned_off=asked == "off")
    return {"state": state, "detail": detail, "landlockAbi": sandbox.landlock_abi()}


def _root(params: dict[str, Any]) -> Path:
    """The workspace folder as the server takes it: rootUri, rootPath, the first folder, the cwd."""
    folders = params.get("workspaceFolders") or [{}]
    first = folders[0] if isinstance(folders, list) and isinstance(folders[0], dict) else {}
    for uri in (params.get("rootUri"), params.get("rootPath"), first.get("uri")):
        if not isinstance(uri, str) or not uri:
            continue
        parsed = urlparse(uri)
        return Path(unquote(parsed.path) if parsed.scheme == "file" else uri).resolve()
    return Path(os.getcwd()).resolve()


def differences(ours: Any, theirs: Any, path: str = "$") -> list[str]:
    """Where two plain JSON values differ, one line per differing path (empty when equal)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found: list[str] = []
        for key in sorted(set(ours) | set(theirs), key=str):
            where = f"{path}.{key}"
            if key not in theirs:
                found.append(f"{where}: {ours[key]!r} here, absent in pygls'")
            elif key not in ours:
                found.append(f"{where}: absent here, {theirs[key]!r} in pygls'")
            else:
                found += differences(ours[key], theirs[key], where)
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        pairs = enumerate(zip(ours, theirs, strict=True))
        return [line for i, (a, b) in pairs for line in differences(a, b, f"{path}[{i}]")]
    if ours != theirs or type(ours) is not type(theirs):
        return [f"{path}: {ours!r} here, {theirs!r} in pygls'"]
    return []


def _dig(value: dict[str, Any], *keys: str) -> dict[str, Any] | None:
    """The object at `keys` ({} where absent), or None where something on the way is not an object."""
    for key in keys:
        value = value.get(key, {})
        if value is None:
            value = {}
        if not isinstance(value, dict):
            return None
    return value


def _position_encoding(client: dict[str, Any]) -> str | None:
    general = _dig(client, "general")
    if general is None:
        return None
    offered = general.get("positionEncodings") or []
    if not isinstance(offered, list) or not all(isinstance(item, str) for item in offered):
        return None
    return next((item for item in offered if item in _ENCODINGS), "utf-16")
