"""JSON on the daemon's hot paths (a step's checkpoints, notifications, model requests and stream
events) by pydantic-core's Rust codec, with the standard library where that codec refuses.

pydantic-core is already a dependency (through pydantic) and is faster than the json module on these
paths (bench/README.md has the figures). It writes dataclasses, enums, sets and tuples as pydantic's
`to_jsonable_python` would, compactly, non-ASCII as UTF-8, and floats by their shortest exact form.

It refuses one thing the daemon must still carry: a lone surrogate ("\\udc80"), which a tool's
undecodable output or a model's broken escape can leave in a str, and which UTF-8 cannot hold. Such
a value is written by the json module with every non-ASCII character escaped, and read by it too.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticSerializationError, from_json, to_json, to_jsonable_python

_ESCAPED = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def dumps(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON; ValueError (or TypeError) for what JSON cannot hold."""
    try:
        return to_json(value)
    except PydanticSerializationError:  # a lone surrogate (or a type neither writer knows)
        return _ESCAPED.encode(to_jsonable_python(value)).encode()


def loads(data: str | bytes) -> Any:
    """The value `data` holds; ValueError when it is not JSON."""
    try:
        return from_json(data)
    except ValueError:  # "\\udc80" escapes are JSON that only the json module reads
        return json.loads(data)
