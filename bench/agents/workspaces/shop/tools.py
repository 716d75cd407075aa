"""Tools for reading and editing the shop package: list files, read them, outline a module, search,
replace text (asks for approval first)."""

from __future__ import annotations

import ast
import os
import re

from mini_agent import tool

SKIP = {"__pycache__", ".mini-agent", ".git"}


def list_files(folder: str = ".") -> list[str]:
    """List every file under a folder, recursively, as paths relative to the workspace root.

    Args:
        folder: Folder to list, relative to the workspace root.
    """
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"no folder named '{folder}'")
    found = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        found += [os.path.normpath(os.path.join(here, name)) for name in files]
    return sorted(found)


def read_file(path: str) -> str:
    """Read a text file; each line is prefixed with its line number.

    Args:
        path: File to read, relative to the workspace root.
    """
    with open(path, encoding="utf-8") as handle:
        return "".join(f"{number}: {line}" for number, line in enumerate(handle, 1))


def outline(module_path: str) -> list[str]:
    """The top-level definitions of a Python module (classes with their methods, functions, constants),
    each with its line number. Raises SyntaxError when the module does not parse as Python 3.

    Args:
        module_path: The .py file, relative to the workspace root.
    """
    with open(module_path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=module_path)
    items = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            items.append(f"class {node.name} (line {node.lineno})")
            items += [f"  method {item.name} (line {item.lineno})" for item in node.body
                      if isinstance(item, ast.FunctionDef)]
        elif isinstance(node, ast.FunctionDef):
            items.append(f"function {node.name} (line {node.lineno})")
        elif isinstance(node, ast.Assign):
            items += [f"constant {target.id} (line {node.lineno})" for target in node.targets
                      if isinstance(target, ast.Name) and target.id.isupper()]
    return items


def search(pattern: str, folder: str = ".") -> list[str]:
    """Search the text files under a folder for a regular expression (Python `re` syntax).

    Args:
        pattern: The regular expression; escape special characters such as `(` to match them literally.
        folder: Folder to search, relative to the workspace root.

    Returns:
        One `path:line: text` entry per matching line.
    """
    regex = re.compile(pattern)
    hits = []
    for path in list_files(folder):
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.readlines()
        except UnicodeDecodeError:
            continue
        hits += [f"{path}:{number}: {line.strip()}" for number, line in enumerate(lines, 1)
                 if regex.search(line)]
    return hits


@tool(requires_approval=True, destructive=True)
def replace_in_file(path: str, old: str, new: str) -> str:
    """Replace one exact piece of text in a file with another. The old text must occur exactly once.

    Args:
        path: File to change, relative to the workspace root.
        old: The exact text to replace, as it appears in the file.
        new: The text to put in its place.
    """
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    found = text.count(old)
    if found != 1:
        raise ValueError(f"the text occurs {found} times in {path}; it must occur exactly once")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(old, new))
    return f"replaced 1 occurrence in {path}"
