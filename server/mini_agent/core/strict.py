"""Parsing values that come in from outside, and the one error a refusal becomes.

Every door and the workspace file parse with `parse` (into a model built on `plumbing.wiremodel.Params`,
which holds the wire's spelling): a wrong type is refused rather than guessed at, and the refusal
(`InvalidParams`) names each field, so a client author can act on it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mini_agent.core.errors import AgentError

P = TypeVar("P", bound=BaseModel)


class InvalidParams(AgentError, ValueError):
    """Params that do not fit the method; `errors` has one line per problem."""

    def __init__(self, method: str, errors: list[str]) -> None:
        super().__init__(f"Invalid params for {method}: " + "; ".join(errors), errors=errors)
        self.errors = errors


def parse(method: str, raw: Any, model: type[P]) -> P:
    try:
        return model.model_validate({} if raw is None else raw)
    except ValidationError as exc:
        raise invalid(method, exc) from None


def invalid(method: str, exc: ValidationError) -> InvalidParams:
    """A validation failure as the one error type the doors map, one readable line per problem."""
    return InvalidParams(method, [_describe(error) for error in exc.errors(include_url=False)])


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "params"
    return f"{where}: {error['msg']}"
