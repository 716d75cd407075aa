"""The base of every model a value from outside is parsed into: camelCase on the wire (JSON-RPC's
convention, and the workspace file's snake_case by name), unknown keys ignored, types strict. The one
place the wire's spelling is declared; `core.strict.parse` turns a refusal into the doors' error."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Params(BaseModel):
    """camelCase on the wire, snake_case by name; unknown keys ignored, types strict."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", strict=True)
