from shop.models import Customer, Order, Product
from shop.pricing import apply_discount, gross_price, net_price


def test_gross_adds_vat() -> None:
    assert gross_price(1000) == 1200


def test_net_removes_vat() -> None:
    assert net_price(1200) == 1000


def test_discount() -> None:
    assert apply_discount(1000, "welcome10") == 900


def test_unknown_code() -> None:
    try:
        apply_discount(1000, "NOPE")
    except KeyError:
        return
    raise AssertionError("an unknown code was accepted")


def test_order_total() -> None:
    order = Order(Customer("Ada", "ada@example.org"))
    order.add(Product("B-1", "Book", 1000), 2)
    assert order.total_cents() == 2400
