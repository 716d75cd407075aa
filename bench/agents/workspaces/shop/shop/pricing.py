"""Prices: VAT and discount codes. Amounts are integer cents."""

from __future__ import annotations

VAT_RATE = 0.2

DISCOUNT_CODES = {
    "WELCOME10": 10,
    "SPRING15": 15,
    "VIP25": 25,
}


def net_price(gross_cents: int) -> int:
    """The price before VAT."""
    return round(gross_cents / (1 + VAT_RATE))


def gross_price(net_cents: int) -> int:
    """The price with VAT added."""
    return round(net_cents * (1 + VAT_RATE))


def apply_discount(net_cents: int, code: str) -> int:
    """The net price after a discount code; an unknown code raises KeyError."""
    percent = DISCOUNT_CODES[code.upper()]
    return round(net_cents * (100 - percent) / 100)
