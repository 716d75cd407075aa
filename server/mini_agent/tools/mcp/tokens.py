"""Where OAuth tokens and client registrations for HTTP MCP servers are kept: the user's state folder.

One JSON file per server URL (its name a digest of the URL) in `<state>/mcp-oauth/`, the folder 0700
and each file 0600, written whole to a temporary file renamed over it. The state folder is per user,
so the tokens are per user and per server; they never go into the workspace, the session store, a
log or a notification. Every value read or written here is masked in the daemon's log. A file larger
than `MAX_TOKEN_FILE_BYTES`, or one that does not parse, is read as empty: the next use signs in again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, TypeVar

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from mini_agent.plumbing.redact import hide_secret
from mini_agent.plumbing.statedir import state_dir

log = logging.getLogger("mini_agent.mcp")

FOLDER = "mcp-oauth"
M = TypeVar("M", OAuthToken, OAuthClientInformationFull)

MAX_TOKEN_FILE_BYTES = 256 << 10  # a larger file is read as empty: the server asks for a new sign-in


def token_file(url: str, folder: Path | None = None) -> Path:
    """The file that holds `url`'s tokens and registration."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:32]
    return (folder or state_dir() / FOLDER) / f"{digest}.json"


class FileTokenStorage:
    """The SDK's `TokenStorage` on one file. `client` is a pre-registered client: it is what
    `get_client_info` answers, and a registration is never stored over it."""

    def __init__(
        self, url: str, *, folder: Path | None = None, client: OAuthClientInformationFull | None = None
    ):
        self.url = url
        self.path = token_file(url, folder)
        self._client = client
        if client is not None:
            hide_secret(client.client_secret)

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens, `expires_in` counted from now (0 once past): a token that expired while
        no daemon ran is refreshed before it is sent."""
        raw = self._read().get("tokens")
        tokens = _hidden(_parsed(OAuthToken, raw))
        expires_at = raw.get("expires_at") if isinstance(raw, dict) else None
        if tokens is not None and isinstance(expires_at, int | float):
            tokens.expires_in = max(int(expires_at - time.time()), 0)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        _hidden(tokens)
        record = tokens.model_dump(mode="json", exclude_none=True)
        if tokens.expires_in is not None:
            record["expires_at"] = time.time() + int(tokens.expires_in)
        self._write("tokens", record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._client is not None:
            return self._client
        info = _parsed(OAuthClientInformationFull, self._read().get("client"))
        if info is not None:
            hide_secret(info.client_secret)
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self._client is not None:
            return
        hide_secret(client_info.client_secret)
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))

    def stored_client(self) -> OAuthClientInformationFull | None:
        """The stored registration (not a pre-registered one), read synchronously."""
        return _parsed(OAuthClientInformationFull, self._read().get("client"))

    def _read(self) -> dict[str, Any]:
        try:
            with self.path.open("rb") as file:
                data = file.read(MAX_TOKEN_FILE_BYTES + 1)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            log.warning("OAuth token file %s cannot be read (%s): signing in again", self.path, exc)
            return {}
        if len(data) > MAX_TOKEN_FILE_BYTES:
            log.warning(
                "OAuth token file %s is over %d bytes: signing in again", self.path, MAX_TOKEN_FILE_BYTES
            )
            return {}
        try:
            table = json.loads(data)
        except ValueError:
            log.warning("OAuth token file %s does not parse: signing in again", self.path)
            return {}
        if not isinstance(table, dict) or table.get("url") != self.url:
            return {}
        return table

    def _write(self, key: str, value: dict[str, Any]) -> None:
        table = self._read() or {"url": self.url}
        table[key] = value
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".tokens-")  # created 0600
        try:
            with os.fdopen(fd, "w") as file:
                json.dump(table, file)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def _parsed(model: type[M], raw: Any) -> M | None:
    if not isinstance(raw, dict):
        return None
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def _hidden(tokens: OAuthToken | None) -> OAuthToken | None:
    if tokens is not None:
        hide_secret(tokens.access_token)
        hide_secret(tokens.refresh_token)
    return tokens
