"""The models a workspace offers for a session: what a model server lists, else the configured model.

`ModelMenu` asks a server's `GET /models` once and keeps the answer (`llm.models.ModelLister`); the
daemon's API key goes to the server it was configured for and to no other. `ModelChoices` is the answer
a door renders (a session's model picker, `/model`). `ModelAccess` is every way a workspace reaches
model servers, over HTTP unless a test gives its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from mini_agent.core.contracts import LLMConfig
from mini_agent.core.ports import WindowProbe
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.models import ModelLister
from mini_agent.llm.window import ServerWindowProbe


@dataclass(frozen=True, slots=True)
class ModelAccess:
    """How a workspace reaches model servers: the client of its turns, the lister of their models and
    the probe of their windows. A test gives fakes (`llm.fake.FakeTransport` under the client, a
    lister's `ask`), so a door runs in one process without a socket."""

    client: OpenAICompatibleClient = field(default_factory=OpenAICompatibleClient)
    lister: ModelLister = field(default_factory=ModelLister)
    probe: WindowProbe = field(default_factory=ServerWindowProbe)


@dataclass(frozen=True, slots=True)
class ModelChoices:
    """The models to offer for a base URL: what its server lists (`source` "server"), else the
    configured model alone (`source` "configured", `message` saying why in words)."""

    base_url: str
    current: str
    models: list[str]
    source: Literal["server", "configured"]
    message: str | None = None


class ModelMenu:
    """The model lists of the servers a workspace's sessions may use; `keys` are the API keys by the
    base URL each was configured for."""

    def __init__(self, keys: Mapping[str, str], lister: ModelLister | None = None) -> None:
        self._keys = {url.rstrip("/"): key for url, key in keys.items() if key}
        self._lister = lister or ModelLister()

    def add_key(self, base_url: str, key: str) -> None:
        """A key set up for `base_url` since (it goes to that server only)."""
        self._keys[base_url.rstrip("/")] = key

    async def choices(
        self, own: LLMConfig, base_url: str | None = None, *, refresh: bool = False
    ) -> ModelChoices:
        """The models to offer for `base_url` (`own`'s, the daemon's model server, by default): asked of
        the server once and kept (`refresh` asks again); the daemon's API key goes to its own server only."""
        url = (base_url or own.base_url).rstrip("/")
        found = await self._lister.models(url, self._keys.get(url), refresh=refresh)
        if found.ids:
            return ModelChoices(url, own.model, list(found.ids), "server")
        message = f"{found.problem}: the configured model {own.model!r} is the only choice"
        return ModelChoices(url, own.model, [own.model], "configured", message)

    def known(self, base_url: str) -> list[str]:
        """The ids kept for `base_url` without asking (none when it was not asked, or listed none)."""
        found = self._lister.known(base_url)
        return list(found.ids) if found is not None else []
