"""Sample data for the demo: a few records an agent can count, list and reason about."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Author:
    name: str
    email: str


@dataclass(frozen=True)
class Book:
    title: str
    author: Author
    year: int
    tags: tuple[str, ...] = field(default_factory=tuple)


LIBRARY = (
    Book("A Short Walk Through Compilers", Author("R. Vale", "vale@example.org"), 2019, ("parsing",)),
    Book("Queues in Practice", Author("M. Osei", "osei@example.org"), 2021, ("systems", "async")),
    Book("The Patient Cache", Author("L. Haddad", "haddad@example.org"), 2023),
)


def books_by_year(year: int) -> list[Book]:
    """The books of the sample library published in `year`."""
    return [book for book in LIBRARY if book.year == year]
