"""The shop's records."""

from __future__ import annotations

from dataclasses import dataclass, field

from shop.pricing import apply_discount, gross_price


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    net_cents: int


@dataclass(frozen=True)
class Customer:
    name: str
    email: str
    country: str = "DE"


@dataclass
class Order:
    customer: Customer
    lines: list[tuple[Product, int]] = field(default_factory=list)
    discount_code: str | None = None

    def add(self, product: Product, quantity: int = 1) -> None:
        self.lines.append((product, quantity))

    def total_cents(self) -> int:
        net = sum(product.net_cents * quantity for product, quantity in self.lines)
        if self.discount_code:
            net = apply_discount(net, self.discount_code)
        return gross_price(net)
