"""Stock levels per product."""

from __future__ import annotations

from collections import Counter


class Inventory:
    """How many of each SKU are in stock."""

    def __init__(self) -> None:
        self._stock: Counter[str] = Counter()

    def add(self, sku: str, quantity: int = 1) -> None:
        self._stock[sku] += quantity

    def remove(self, sku: str, quantity: int = 1) -> None:
        if self._stock[sku] < quantity:
            raise ValueError(f"only {self._stock[sku]} of {sku} in stock")
        self._stock[sku] -= quantity

    def count(self, sku: str) -> int:
        return self._stock[sku]

    def skus(self) -> list[str]:
        return sorted(sku for sku, quantity in self._stock.items() if quantity > 0)
