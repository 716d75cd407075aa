"""Session values as the store's JSON text and back, by pydantic rather than by hand.

pydantic turns dataclasses, enums and sets into plain data and rebuilds a declared type from it; the
standard json module writes the text, because pydantic's writer refuses the lone surrogates that
tool output can hold (JSON escapes them instead). Floats are written with repr, so numbers come back
exactly.
"""

from __future__ import annotations

import functools
import json
from typing import Any, overload

from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

# check_circular is off: history holds no cycles, and one would still end in RecursionError.
_RAW = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_ESCAPED = json.JSONEncoder(separators=(",", ":"), check_circular=False)
_EMPTY: dict[type, str] = {dict: "{}", list: "[]"}  # a session's decisions and approvals, nearly always


def dumps(value: Any) -> str:
    if not value and type(value) in _EMPTY:
        return _EMPTY[type(value)]
    data = to_jsonable_python(value)
    text = _RAW.encode(data)
    if sql_text(text) is text:
        return text
    return _ESCAPED.encode(data)  # \udc80 escapes survive where raw surrogates cannot


def loads(kind: Any, text: str) -> Any:
    return _adapter(kind).validate_python(json.loads(text))


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
