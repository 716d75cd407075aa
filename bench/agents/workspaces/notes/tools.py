"""Tools for a folder of markdown notes (notes/*.md, each with a `tags:` line in its front matter)."""

from __future__ import annotations

import difflib
import os

from mini_agent import tool

FOLDER = "notes"


def _path(name: str) -> str:
    name = os.path.basename(name)
    if not name.endswith(".md"):
        name += ".md"
    path = os.path.join(FOLDER, name)
    if not os.path.isfile(path):
        close = difflib.get_close_matches(name, os.listdir(FOLDER), n=3)
        raise FileNotFoundError(f"no note named '{name}'" + (f"; did you mean {close}?" if close else ""))
    return path


def _tags(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("tags:"):
                return [tag.strip() for tag in line[5:].split(",") if tag.strip()]
    return []


def list_notes(tag: str | None = None) -> list[str]:
    """The names of the notes, sorted (dated notes sort by date), optionally only those with a tag.

    Args:
        tag: Keep only the notes carrying this tag; leave it out for every note.
    """
    names = sorted(name for name in os.listdir(FOLDER) if name.endswith(".md"))
    if tag is None:
        return names
    return [name for name in names if tag.lower() in (t.lower() for t in _tags(os.path.join(FOLDER, name)))]


def read_note(name: str) -> str:
    """The full text of one note.

    Args:
        name: The note's file name, e.g. "ideas.md".
    """
    with open(_path(name), encoding="utf-8") as handle:
        return handle.read()


def search_notes(text: str) -> list[str]:
    """Find the lines of all notes that contain a text (case-insensitive).

    Args:
        text: The text to look for.

    Returns:
        One `note: line` entry per matching line.
    """
    hits = []
    for name in list_notes():
        with open(os.path.join(FOLDER, name), encoding="utf-8") as handle:
            hits += [f"{name}: {line.strip()}" for line in handle if text.lower() in line.lower()]
    return hits


@tool(requires_approval=True, destructive=True)
def append_to_note(name: str, line: str) -> str:
    """Add one line at the end of a note.

    Args:
        name: The note's file name, e.g. "todo.md".
        line: The line to add, without a line break.
    """
    path = _path(name)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if text and not text.endswith("\n"):
        text += "\n"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text + line.rstrip("\n") + "\n")
    return f"added 1 line to {os.path.basename(path)}"
