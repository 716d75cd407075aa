"""The workspace configuration file on disk: which file a folder has, read within a size bound and
parsed as TOML.

`.mini-agent/config.toml` wins over a `[tool.mini-agent]` table in `pyproject.toml` (a whole-file
choice, not a merge). A file larger than `MAX_FILE_BYTES` is refused unread: parsing it would hold the
daemon up. Standard library only, so the LSP door's early `initialize` answer can read it (`app.trust`);
`app.config` validates what it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_FILE = Path(".mini-agent") / "config.toml"
PYPROJECT = "pyproject.toml"
MAX_FILE_BYTES = 1 << 20


class Unreadable(Exception):
    """The file cannot be used; the message names it and says why, `file` is its path."""

    def __init__(self, message: str, file: Path) -> None:
        super().__init__(message)
        self.file = str(file)


@dataclass(frozen=True, slots=True)
class Found:
    """The table the folder's workspace file holds, where it was read, and its keys' prefix there."""

    table: dict[str, Any]
    source: str
    prefix: str


def find(root: Path) -> Found | None:
    """`root`'s workspace table; None when it has none, `Unreadable` when it cannot be used."""
    own = root / CONFIG_FILE
    if own.is_file():
        return Found(read(own), str(own), "")
    pyproject = root / PYPROJECT
    if pyproject.is_file():
        tool = read(pyproject).get("tool")
        table = tool.get("mini-agent") if isinstance(tool, dict) else None
        if table is not None:
            if not isinstance(table, dict):
                raise Unreadable(f"{pyproject}: [tool.mini-agent] must be a table", pyproject)
            return Found(table, str(pyproject), "tool.mini-agent.")
    return None


def read(path: Path) -> dict[str, Any]:
    """`path` as TOML, at most `MAX_FILE_BYTES` of it."""
    import tomllib  # not before a folder has a workspace file: `initialize` is answered first

    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise Unreadable(f"{path}: cannot read it: {exc}", path) from None
    if len(data) > MAX_FILE_BYTES:
        raise Unreadable(
            f"{path}: larger than {MAX_FILE_BYTES} bytes, the most a workspace file may hold; it is not read",
            path,
        )
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise Unreadable(f"{path}: cannot read it as TOML: {exc}", path) from None
