"""The trust store: the folders the user trusts, each with a digest of what trusting it runs.

A workspace file may name things only a trusted folder gets (`app.config`): tool files (importing them
runs the folder's code), MCP servers (commands it starts), a model server (where the conversation
goes) and standing `approval.allow` answers. `Runs` is that list for one folder; its `digest` hashes
it with what it runs: the tool files' contents, the workspace modules they import and the workspace
files the MCP servers' command lines name (`app.trust_digest`), so that a changed tool file, module,
server script or list asks again (as `direnv allow` does). A folder whose imports go past the
digest's bound is never remembered. The store is one JSON file, `trust.json`, in the user's state folder
(`$MINI_AGENT_STATE_DIR`, else `$XDG_STATE_HOME/mini-agent`, else `~/.local/state/mini-agent`), never
inside a workspace: keyed by the folder's real path, each entry the digest, the list in words and the
time. It is written whole, to a temporary file renamed over it, 0600 in a 0700 folder, and changed
under an advisory lock (`trust.json.lock` beside it, `statedir.locked`) with the store re-read inside
the lock, so concurrent `trust` and `untrust` processes lose no decision. A trust file
larger than `MAX_STORE_BYTES`, or one that does not parse, is read as empty (and a log line says so).

`distrust` is what a folder not trusted takes up of a session its store holds.

Standard library only: the LSP door's `initialize` answer (`lsp.capabilities`) reports trust before
anything else loads. Reading tool files blocks: callers on an event loop run these in a thread.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mini_agent.app import trust_digest, workspace_file
from mini_agent.plumbing.statedir import STATE_DIR_ENV as STATE_DIR_ENV
from mini_agent.plumbing.statedir import locked, state_dir, write_private

if TYPE_CHECKING:
    import logging

    from mini_agent.core.contracts import LLMConfig
    from mini_agent.core.session import AgentSession

# hashlib, tempfile and logging are imported where they are used: `initialize` is answered
# before any of them is needed (a folder without a workspace file needs none).

STORE_FILE = "trust.json"
STORE_VERSION = 1
MAX_STORE_BYTES = 4 << 20  # a larger trust file is read as empty: nothing is trusted from it
MAX_FOLDERS = 10_000  # remembered folders; remembering one more forgets the oldest
MAX_HASHED_BYTES = trust_digest.MAX_HASHED_BYTES  # of each file: hashed this far, and its size noted


class Configured(Protocol):
    """What `app.config.WorkspaceConfig` says that waits for trust."""

    @property
    def tools(self) -> tuple[str, ...]: ...

    @property
    def mcp_servers(self) -> tuple[Mapping[str, Any], ...]: ...

    @property
    def llm(self) -> Mapping[str, Any]: ...

    @property
    def allow(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class Runs:
    """What trusting a folder would run or allow, as its workspace file says it."""

    tools: tuple[str, ...] = ()
    mcp_servers: tuple[Mapping[str, Any], ...] = ()
    base_url: str | None = None
    allow: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: Configured) -> Runs:
        base_url = config.llm.get("base_url")
        return cls(tuple(config.tools), tuple(config.mcp_servers),
                   base_url if isinstance(base_url, str) else None, tuple(config.allow))

    @property
    def needed(self) -> bool:
        """Whether anything here waits for trust."""
        return bool(self.tools or self.mcp_servers or self.base_url or self.allow)

    def words(self) -> list[str]:
        """Each item as a person reads it in a prompt or a message."""
        out = [f"tools file {path}" for path in self.tools]
        out += [f"MCP server {_server_words(server)}" for server in self.mcp_servers]
        if self.base_url:
            out.append(f"model server {self.base_url}")
        if self.allow:
            out.append(f"always allow: {', '.join(self.allow)}")
        return out

    def digest(self, root: Path) -> str:
        """sha256 of a canonical JSON of everything here and of what it runs (`covered`)."""
        return self.covered(root)[0]

    def covered(self, root: Path) -> tuple[str, str | None]:
        """The digest, and why it cannot cover everything trusting runs (None: it does).

        It hashes each tool file's content, the workspace modules they import (followed through the
        folder, `trust_digest.walk`), the workspace files each MCP server's command line names (and
        the modules a Python one imports), the server entries, `llm.base_url` and `approval.allow`.
        The keys for imports and server files appear only where there are some, so a folder with
        neither keeps the digest it was remembered with before they were hashed. Past the walk's
        bound the digest carries the reason, and such a folder is never remembered."""
        starts = [trust_digest.Start(root / path, (root, (root / path).parent)) for path in self.tools]
        server_files: list[dict[str, Any]] = []
        for index, server in enumerate(self.mcp_servers):
            files, walked = trust_digest.server_files(root, server)
            server_files += [{"server": index, "path": trust_digest.relative(root, file),
                              **trust_digest.file_hash(file)} for file in files]
            starts += walked
        reached = trust_digest.walk(root, starts) if starts else trust_digest.Walk()
        canonical: dict[str, Any] = {
            "tools": [{"path": path, **trust_digest.file_hash(root / path)} for path in self.tools],
            "mcpServers": list(self.mcp_servers),
            "baseUrl": self.base_url,
            "allow": list(self.allow),
        }
        if reached.files:
            canonical["imports"] = reached.files
        if server_files:
            canonical["mcpFiles"] = server_files
        if reached.bound is not None:
            canonical["bound"] = reached.bound
        text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
        import hashlib

        return hashlib.sha256(text.encode()).hexdigest(), reached.bound


@dataclass(frozen=True, slots=True)
class Status:
    """A folder's trust as the doors report it (`wouldRun` is `Runs.words`)."""

    remembered: bool
    needed: bool
    would_run: list[str]


def _server_words(server: Mapping[str, Any]) -> str:
    name = server.get("name", "?")
    if server.get("url"):
        return f"{name}: {server['url']}"
    command = [str(server.get("command", "")), *(str(arg) for arg in server.get("args") or [])]
    return f"{name}: {' '.join(command).strip()}"


def real(root: Path) -> str:
    """The store's key for a folder: its real path."""
    return os.path.realpath(root)


def store_path() -> Path:
    return state_dir() / STORE_FILE


def load_store() -> dict[str, dict[str, Any]]:
    """The remembered folders; an absent, oversized or unreadable trust file is an empty store."""
    path = store_path()
    try:
        with path.open("rb") as file:
            data = file.read(MAX_STORE_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        _log().warning("the trust file %s cannot be read (%s): no folder is trusted from it", path, exc)
        return {}
    if len(data) > MAX_STORE_BYTES:
        _log().warning("the trust file %s is larger than %d bytes: no folder is trusted from it",
                    path, MAX_STORE_BYTES)
        return {}
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError) as exc:
        _log().warning("the trust file %s is not JSON (%s): no folder is trusted from it", path, exc)
        return {}
    folders = parsed.get("folders") if isinstance(parsed, dict) else None
    if not isinstance(folders, dict):
        _log().warning("the trust file %s holds no `folders` object: no folder is trusted from it", path)
        return {}
    return {key: value for key, value in folders.items() if isinstance(value, dict)}


def _save_store(folders: Mapping[str, Mapping[str, Any]]) -> None:
    """Write the whole store: a temporary file in the same folder, renamed over the old one."""
    text = json.dumps({"version": STORE_VERSION, "folders": folders}, indent=1, sort_keys=True)
    write_private(store_path(), text)


def status(root: Path, runs: Runs) -> Status:
    """Whether `root` is remembered with the digest `runs` has now."""
    entry = load_store().get(real(root))
    digest, bound = runs.covered(root)
    remembered = entry is not None and bound is None and entry.get("digest") == digest
    return Status(remembered=remembered, needed=runs.needed, would_run=runs.words())


def is_trusted(root: Path, config: Configured) -> bool:
    """Whether the user trusts `root` as its workspace file stands now (same digest as remembered)."""
    return status(root, Runs.of(config)).remembered


def remember(root: Path, config: Configured) -> list[str]:
    """Trust `root` as its workspace file stands now, for every later daemon; returns `wouldRun`."""
    key = real(root)
    if _inside(store_path(), Path(key)):
        raise ValueError(f"the trust file {store_path()} lies inside {key}: a folder cannot vouch for itself")
    runs = Runs.of(config)
    digest, bound = runs.covered(root)  # files read before the lock: it is held briefly
    if bound is not None:
        raise ValueError(
            f"{key} cannot be remembered: its tools import {bound} (the trust digest follows at most "
            f"{trust_digest.MAX_FILES} files and {trust_digest.MAX_BYTES} bytes), so a change past that "
            "would go unseen; trust it for one session instead, and it is asked about each time"
        )
    words = runs.words()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with locked(store_path()):  # re-read inside it: a concurrent change made meanwhile is kept
        folders = load_store()
        folders.pop(key, None)
        while len(folders) >= MAX_FOLDERS:
            oldest = min(folders, key=lambda name: str(folders[name].get("trustedAt", "")))
            folders.pop(oldest)
        folders[key] = {"digest": digest, "wouldRun": words, "trustedAt": stamp}
        _save_store(folders)
    return words


def forget(root: Path) -> list[str] | None:
    """Trust `root` no more; returns the `wouldRun` it was remembered with (None: it was not)."""
    with locked(store_path()):
        folders = load_store()
        entry = folders.pop(real(root), None)
        if entry is None:
            return None
        _save_store(folders)
    words = entry.get("wouldRun")
    return [str(word) for word in words] if isinstance(words, list) else []


def _inside(path: Path, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(folder)


def read_runs(root: Path) -> Runs | None:
    """What `root`'s workspace file names, read without validation (for the LSP door's early
    `initialize` answer); None where the file cannot be read (the daemon then reports why)."""
    table = _raw_table(root)
    if table is None:
        return None
    llm, approval = table.get("llm", {}), table.get("approval", {})
    tools, servers = table.get("tools", []), table.get("mcp_servers", [])
    allow = approval.get("allow", []) if isinstance(approval, dict) else []
    if not (isinstance(llm, dict) and _strings(tools) and _strings(allow) and isinstance(servers, list)
            and all(isinstance(server, dict) for server in servers)):
        return None
    base_url = llm.get("base_url")
    return Runs(tuple(tools), tuple(servers), base_url if isinstance(base_url, str) else None, tuple(allow))


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _raw_table(root: Path) -> dict[str, Any] | None:
    try:
        found = workspace_file.find(root)
    except (workspace_file.Unreadable, OSError):
        return None
    return {} if found is None else found.table


def held_back_note(root: Path, words: Iterable[str]) -> str:
    """What an untrusted folder left out, why, and how to trust it, in one paragraph."""
    listed = "; ".join(words)
    return (
        f"This folder ({root}) is not trusted, so what its workspace file names is held back: {listed}. "
        f"To trust it, run `mini-agent trust {root}` (or answer \"Always trust this folder\" when asked), "
        "then start a new agent."
    )


def _log() -> logging.Logger:
    import logging

    return logging.getLogger(__name__)


def distrust(session: AgentSession, own: LLMConfig) -> None:
    """What of a stored session a workspace not trusted takes up: the model settings `own` (the
    stored ones only where they name the same server), no `ask_never`, no decision that allows a call."""
    from dataclasses import replace

    from mini_agent.core.session import PermissionMode  # not at import: `initialize` is answered first

    if session.config.llm.base_url.rstrip("/") != own.base_url.rstrip("/"):
        session.config = session.config.with_overrides(llm=own)
    if session.config.permission_mode is PermissionMode.ASK_NEVER:
        session.config = replace(session.config, permission_mode=PermissionMode.ASK_WHEN_NEEDED)
    session.standing_decisions = {n: d for n, d in session.standing_decisions.items() if not d.allows}
    session.pending = [p for p in session.pending if p.decision is None or not p.decision.allows]
