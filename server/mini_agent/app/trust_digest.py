"""What trusting a folder runs beyond the files its workspace file names, for `app.trust`'s digest.

- **Imports.** A tool file is executed in the tool host with the workspace root first on `sys.path`, so
  every workspace module it imports runs too, and whatever those import. `walk` follows them: each file
  is read and parsed with `ast` (never executed), and `import x`, `import x.y`, `from x import y`
  (`x/y.py` when it is a module), relative imports (`from . import y`, `from ..x import y`, against the
  importing file's package folder), the packages' `__init__` files on the way, and
  `importlib.import_module("x")` / `__import__("x")` with a constant name are resolved against the
  search folders (the workspace root, and the folder of the file the walk started from) the way the
  import system's path finder would: `x/__init__.py`, `x.py`, their bytecode and extension modules.
  Only files whose real path lies inside the workspace folder count (a name that resolves elsewhere is
  an installed package or the standard library); cycles end where a file was already seen. The walk is
  bounded (`MAX_FILES` files, `MAX_BYTES` bytes read); past the bound it stops and says so (`Walk.bound`),
  and the trust store then cannot remember the folder, since a change beyond the bound would go unseen.
- **MCP servers.** A server the workspace file starts (`command` and `args`) runs its own files: each
  word of its command line (and the value of a `--flag=value` word) that names an existing file inside
  the folder, relative to the folder (the server's working directory) or absolute, is hashed; a Python
  one (`.py`) is walked as above, from its own folder (Python puts a script's folder first on
  `sys.path`), and `-m module` (and a package's `__main__`) is resolved against the workspace root,
  each with the `sitecustomize` / `usercustomize` module Python's `site` would import from there.

What no digest here can see: code outside the folder (installed packages, a virtual environment's
`site-packages`, even one inside the folder when it is not imported by a workspace name), files read
at run time (data, configuration, a `subprocess` it starts), and imports whose name is computed.

Standard library only, and `ast` imported only when there is something to parse: the LSP door's
`initialize` answer reports trust before anything else loads.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import machinery
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ast

MAX_FILES = 500  # files walked (the starting ones included); one more and the walk stops, bounded
MAX_BYTES = 16 << 20  # of source parsed, all files together; one byte more and the walk stops, bounded

SOURCE = tuple(machinery.SOURCE_SUFFIXES)
# What the path finder imports a name from, in a folder: source, bytecode without source, extensions.
SUFFIXES = (*SOURCE, *machinery.BYTECODE_SUFFIXES, *machinery.EXTENSION_SUFFIXES)
MAX_HASHED_BYTES = 64 << 20  # of each file hashed whole (a tool file, an MCP server's, an extension)
DYNAMIC = frozenset({"import_module", "__import__"})


@dataclass(frozen=True, slots=True)
class Start:
    """A file the walk starts from, and the folders an absolute import in it (or in what it imports)
    is looked up in, first to last."""

    path: Path
    search: tuple[Path, ...]


@dataclass(slots=True)
class Walk:
    """The workspace files reached by imports (the starting files not among them, unless one imports
    another), each `{path, sha256, size}` with `path` relative to the folder; `bound` says why the walk
    stopped short (None: it did not)."""

    files: list[dict[str, Any]] = field(default_factory=list)
    bound: str | None = None


def walk(root: Path, starts: Iterable[Start], *, max_files: int = MAX_FILES,
         max_bytes: int = MAX_BYTES) -> Walk:
    """Follow the imports of `starts` through the workspace `root` (see the module's docstring)."""
    top = Path(os.path.realpath(root))
    out = Walk()
    seen: set[Path] = set()
    queue: deque[tuple[Path, tuple[Path, ...], bool]] = deque()
    for start in starts:
        path = _inside(top, start.path)
        if path is not None and path not in seen and os.path.isfile(path):
            seen.add(path)
            queue.append((path, start.search, True))
    if len(seen) > max_files:
        out.bound = f"more than {max_files} files to follow"
        return out
    listing: dict[Path, frozenset[str]] = {}
    left = max_bytes
    while queue:
        path, search, starting = queue.popleft()
        if not path.name.endswith(SOURCE):  # bytecode and extension modules: hashed, not followed
            if not starting:
                out.files.append({"path": path.relative_to(top).as_posix(), **file_hash(path)})
            continue
        try:
            with path.open("rb") as file:
                data = file.read(left + 1)
        except OSError:  # unreadable now: it would not import either; its absence is in the digest
            if not starting:
                out.files.append({"path": path.relative_to(top).as_posix(), "sha256": None})
            continue
        if len(data) > left:
            out.bound = f"more than {max_bytes} bytes of modules to read"
            return out
        left -= len(data)
        if not starting:
            out.files.append({"path": path.relative_to(top).as_posix(), **_hashed(data)})
        for found in _targets(top, path, data, search, listing):
            if found in seen:
                continue
            if len(seen) >= max_files:
                out.bound = f"more than {max_files} files to follow"
                return out
            seen.add(found)
            queue.append((found, search, False))
    out.files.sort(key=lambda entry: str(entry["path"]))
    return out


def server_files(root: Path, server: Mapping[str, Any]) -> tuple[list[Path], list[Start]]:
    """The existing files inside `root` that an MCP server entry's command line names (real paths,
    in order, each once), and the walk's starts for the Python ones and a `-m module`."""
    command = server.get("command")
    if not isinstance(command, str) or not command:
        return [], []
    args = server.get("args")
    words = [command, *(str(arg) for arg in args)] if isinstance(args, list | tuple) else [command]
    top = Path(os.path.realpath(root))
    files: list[Path] = []
    starts: list[Start] = []

    def python(modules: Iterable[str], folder: Path) -> None:
        """What running Python with `folder` first on `sys.path` imports of the workspace: the
        `modules`, and the `sitecustomize` / `usercustomize` that `site` imports at start-up."""
        for module in (*modules, "sitecustomize", "usercustomize"):
            for found in _module(top, module, (folder,), {}):
                if found not in files:
                    files.append(found)
                    starts.append(Start(found, (folder, top)))

    for index, word in enumerate(words):
        for name in _named(word):
            candidate = _inside(top, Path(name) if os.path.isabs(name) else top / name)
            if candidate is None or candidate in files or not os.path.isfile(candidate):
                continue
            files.append(candidate)
            if candidate.name.endswith(SOURCE):  # a script: its folder is first on sys.path
                starts.append(Start(candidate, (candidate.parent, top)))
                python((), candidate.parent)
        if word == "-m" and index + 1 < len(words):  # `-m pkg.mod`, or `-m pkg` (its __main__)
            module = words[index + 1]
            python((module, f"{module}.__main__"), top)
    return files, starts


def relative(root: Path, path: Path) -> str:
    """`path` (a real path inside `root`) as the digest names it: relative to the folder, with `/`."""
    return Path(path).relative_to(Path(os.path.realpath(root))).as_posix()


def _named(word: str) -> Iterator[str]:
    """The paths a command-line word may name: itself, and what follows `=` in `--flag=value`."""
    if word and "\0" not in word:
        yield word
        flag, equals, value = word.partition("=")
        if equals and value and flag.startswith("-"):
            yield value


def file_hash(path: Path, limit: int = MAX_HASHED_BYTES) -> dict[str, Any]:
    """A file's content hash and size (sha256 None when it cannot be read), over at most `limit` bytes."""
    import hashlib

    digest = hashlib.sha256()
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            left = limit
            while left > 0 and (chunk := file.read(min(1 << 20, left))):
                digest.update(chunk)
                left -= len(chunk)
    except OSError:
        return {"sha256": None}
    return {"sha256": digest.hexdigest(), "size": size}


def _hashed(data: bytes) -> dict[str, Any]:
    import hashlib

    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _inside(top: Path, path: Path) -> Path | None:
    """`path`'s real path when it lies inside the folder `top` (a real path), else None."""
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None
    return real if real.is_relative_to(top) else None


def _targets(top: Path, path: Path, data: bytes, search: tuple[Path, ...],
             listing: dict[Path, frozenset[str]]) -> Iterator[Path]:
    """The workspace files the module at `path` (whose source is `data`) may import."""
    tree = _parse(data, path)
    if tree is None:
        return
    for level, name in _imports(tree):
        if level == 0:
            yield from _module(top, name, search, listing)
            continue
        base = path.parent
        for _ in range(level - 1):
            base = base.parent
        if _inside(top, base) is None:
            continue  # `from .. import x` above the folder: nothing of the workspace
        yield from _package_init(top, base, listing)
        if name:
            yield from _module(top, name, (base,), listing)


def _parse(data: bytes, path: Path) -> ast.Module | None:
    import ast

    try:
        return ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # it will not import either; its bytes are in the digest all the same


def _imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Each `(level, dotted name)` the module imports; `from x import y` gives `x` and `x.y` (y may
    be a submodule), a relative one its level with the name after the dots ("" for `from . import`)."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module or node.level:
                yield node.level, module
            for alias in node.names:
                if alias.name != "*":
                    yield node.level, f"{module}.{alias.name}" if module else alias.name
        elif isinstance(node, ast.Call) and node.args and _dynamic(node.func):
            first = node.args[0]
            named = first.value if isinstance(first, ast.Constant) else None
            if isinstance(named, str) and named and not named.startswith("."):
                yield 0, named


def _dynamic(func: ast.expr) -> bool:
    import ast

    if isinstance(func, ast.Name):
        return func.id in DYNAMIC
    return isinstance(func, ast.Attribute) and func.attr in DYNAMIC


def _module(top: Path, dotted: str, search: Sequence[Path],
            listing: dict[Path, frozenset[str]]) -> Iterator[Path]:
    """The files inside `top` that importing `dotted` from any of `search` may run: each package's
    `__init__` on the way down and the module itself, in every form the path finder would take."""
    parts = dotted.split(".")
    if not all(part.isidentifier() for part in parts):
        return
    for base in search:
        folder = base
        for part in parts:
            names = _names(folder, listing)
            for suffix in SUFFIXES:
                if part + suffix in names:
                    found = _inside(top, folder / (part + suffix))
                    if found is not None and os.path.isfile(found):
                        yield found
            if part not in names:
                break
            folder = folder / part
            yield from _package_init(top, folder, listing)


def _package_init(top: Path, folder: Path, listing: dict[Path, frozenset[str]]) -> Iterator[Path]:
    names = _names(folder, listing)
    for suffix in SUFFIXES:
        if "__init__" + suffix in names:
            found = _inside(top, folder / ("__init__" + suffix))
            if found is not None and os.path.isfile(found):
                yield found


def _names(folder: Path, listing: dict[Path, frozenset[str]]) -> frozenset[str]:
    """The names in `folder` (empty when it is none), listed once per walk."""
    names = listing.get(folder)
    if names is None:
        try:
            names = frozenset(os.listdir(folder))
        except (OSError, ValueError):
            names = frozenset()
        listing[folder] = names
    return names
