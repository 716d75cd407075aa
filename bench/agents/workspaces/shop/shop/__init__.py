"""A small shop: products, orders, prices and an inventory."""

from shop.models import Customer, Order, Product
from shop.pricing import apply_discount, gross_price, net_price

__version__ = "1.4.2"
__all__ = ["Customer", "Order", "Product", "apply_discount", "gross_price", "net_price"]
