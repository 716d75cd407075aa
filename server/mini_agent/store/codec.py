"""Session values as the store's JSON text and back, by pydantic rather than by hand.

pydantic-core writes dataclasses, enums and sets as JSON (`jsoncodec`: the json module takes the lone
surrogates tool output can hold, escaped), and pydantic rebuilds a declared type from the plain data.
Floats are written in their shortest exact form, so numbers come back exactly.
"""

from __future__ import annotations

import functools
from typing import Any, overload

from pydantic import TypeAdapter

from mini_agent.plumbing import jsoncodec


def dumps(value: Any) -> str:
    return jsoncodec.dumps(value).decode()


def loads(kind: Any, text: str) -> Any:
    return _adapter(kind).validate_python(jsoncodec.loads(text))


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    """Built once per type: loading a session decodes hundreds of values."""
    return TypeAdapter(kind)


def sql_text(value: str | None) -> str | bytes | None:
    """A string with lone surrogates (a tool's undecodable file name, a JSON "\\udc80") is not valid
    UTF-8, so SQLite cannot take it as TEXT; it goes in as a BLOB that `from_sql` turns back into it."""
    if value is None or value.isascii():
        return value
    try:
        value.encode()
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


@overload
def from_sql(value: str | bytes) -> str: ...
@overload
def from_sql(value: None) -> None: ...
def from_sql(value: str | bytes | None) -> str | None:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value
