"""Tools for a folder of data files: CSV tables and JSON documents under data/."""

from __future__ import annotations

import csv
import json
import os
from typing import Any

FOLDER = "data"


def list_datasets() -> list[str]:
    """The data files (CSV and JSON) under data/, as paths relative to the workspace root."""
    return sorted(os.path.join(FOLDER, name) for name in os.listdir(FOLDER)
                  if name.endswith((".csv", ".json")))


def _rows(path: str) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def describe_csv(path: str) -> dict[str, Any]:
    """The columns and the number of data rows (header not counted) of a CSV file.

    Args:
        path: The CSV file, relative to the workspace root, e.g. "data/sales.csv".
    """
    rows = _rows(path)
    with open(path, encoding="utf-8", newline="") as handle:
        columns = next(csv.reader(handle))
    return {"columns": columns, "rows": len(rows)}


def _matching(rows: list[dict[str, str]], where: dict[str, str] | None) -> list[dict[str, str]]:
    where = where or {}
    columns = list(rows[0]) if rows else []
    unknown = [column for column in where if column not in columns]
    if unknown:
        raise KeyError(f"no column named {unknown[0]!r}; the columns are {columns}")
    return [row for row in rows if all(row[k].lower() == str(v).lower() for k, v in where.items())]


def sum_column(path: str, column: str, where: dict[str, str] | None = None) -> float:
    """The sum of a numeric CSV column, over all rows or only the rows matching every `where` condition.

    Args:
        path: The CSV file, relative to the workspace root.
        column: The numeric column to add up.
        where: Optional exact-match conditions, column name to value, e.g. {"region": "North"}.
    """
    rows = _matching(_rows(path), where)
    if rows and column not in rows[0]:
        raise KeyError(f"no column named {column!r}; the columns are {list(rows[0])}")
    return sum(float(row[column]) for row in rows)


def count_rows(path: str, where: dict[str, str] | None = None) -> int:
    """How many data rows of a CSV file match every `where` condition (all rows without conditions).

    Args:
        path: The CSV file, relative to the workspace root.
        where: Optional exact-match conditions, column name to value, e.g. {"product": "widget"}.
    """
    return len(_matching(_rows(path), where))


def read_json(path: str) -> Any:
    """The content of a JSON file.

    Args:
        path: The JSON file, relative to the workspace root, e.g. "data/config.json".
    """
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
