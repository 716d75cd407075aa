"""Two file-system tools for the demo agent: list the Python files of a folder, count a file's lines.

Register this file with `agent/registerTool {"path": "tools.py"}`; relative paths are resolved from
the workspace root, which is the tool host's working directory.
"""

from __future__ import annotations

import os


def list_python_files(directory: str = ".") -> list[str]:
    """List the Python source files in a directory, sorted by name.

    Only the directory itself is searched, not its subdirectories.

    Args:
        directory: Folder to look in, relative to the workspace root. Defaults to the root itself.

    Returns:
        The names of the `.py` files found there.

    Raises:
        FileNotFoundError: The directory does not exist.
    """
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"no directory named '{directory}'")
    return sorted(name for name in os.listdir(directory) if name.endswith(".py"))


def count_file_lines(file_path: str, ignore_empty: bool = True) -> int:
    """Count the lines of a text file.

    Args:
        file_path: The file to count, relative to the workspace root.
        ignore_empty: Leave out lines that hold only whitespace.

    Returns:
        The number of lines counted.

    Raises:
        FileNotFoundError: The file does not exist.
    """
    if not os.path.isfile(file_path):
        raise FileNotFoundError(f"no file named '{file_path}'")
    with open(file_path, encoding="utf-8") as handle:
        lines = handle.readlines()
    if ignore_empty:
        lines = [line for line in lines if line.strip()]
    return len(lines)
