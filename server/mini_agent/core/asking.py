"""What a tool source may ask of the person at the editor, whatever the door: a question with a form
to fill (an MCP server's elicitation), or a link to open (a login, or a URL-mode elicitation).

`Person` is the port: the door's client answers it (LSP `agent/elicit` and `window/showDocument`, ACP
`elicitation/create`), and a door with nobody to ask declines. Nothing here waits or does I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol


class ElicitAction(enum.StrEnum):
    ACCEPT = "accept"  # the person answered; `content` holds the form's values
    DECLINE = "decline"  # the person said no (or there was nobody to ask)
    CANCEL = "cancel"  # the person dismissed the question without choosing


@dataclass(frozen=True, slots=True)
class Elicitation:
    """One question for the person of `session_id`, from MCP server `server`. Form mode carries
    `schema` (a flat object of primitive fields, as MCP's `requestedSchema`); URL mode carries `url`."""

    session_id: str
    server: str
    message: str
    schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None

    @property
    def is_url(self) -> bool:
        return self.url is not None


@dataclass(frozen=True, slots=True)
class ElicitAnswer:
    action: ElicitAction
    content: dict[str, Any] = field(default_factory=dict)
    unasked: bool = False  # declined because nobody could be asked, not by the person

    @classmethod
    def declined(cls) -> ElicitAnswer:
        """The answer where the client cannot ask (or gave no usable answer)."""
        return cls(ElicitAction.DECLINE, unasked=True)


class Person(Protocol):
    """The person behind a session, as a tool source reaches them."""

    async def elicit(self, request: Elicitation) -> ElicitAnswer:
        """The person's answer; `ElicitAnswer.declined()` when the client cannot ask."""
        ...

    async def open_url(self, session_id: str, url: str, purpose: str) -> bool:
        """Ask the client to open `url` in the person's browser (`purpose` says why, in words); whether
        the client said it did. The URL itself may be a secret-free authorization link only."""
        ...


class Nobody:
    """A `Person` where there is nobody to ask: every question is declined, no link is opened."""

    async def elicit(self, request: Elicitation) -> ElicitAnswer:
        return ElicitAnswer.declined()

    async def open_url(self, session_id: str, url: str, purpose: str) -> bool:
        return False
