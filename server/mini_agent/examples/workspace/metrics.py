"""Small arithmetic tools that pair with `tools.py` (e.g. the average size of the listed files)."""

from __future__ import annotations


def average(values: list[float]) -> float:
    """The arithmetic mean of some numbers.

    Args:
        values: The numbers to average; at least one.

    Raises:
        ValueError: `values` is empty.
    """
    if not values:
        raise ValueError("cannot average an empty list")
    return sum(values) / len(values)
