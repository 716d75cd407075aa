"""The daemon's version, from one place: the installed package's metadata, which pyproject.toml sets.

Every door names it (LSP `serverInfo`, ACP `agentInfo`, the MCP server and client `Implementation`);
they import it from here, below them, not from the package root (whose lazy `tool` import reaches up
into `tools`).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

UNKNOWN = "0+unknown"  # a source tree run without installing it


def _installed() -> str:
    try:
        return version("mini-agent")
    except PackageNotFoundError:
        return UNKNOWN


VERSION = _installed()
