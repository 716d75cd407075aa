"""Keeps API keys out of the log.

pygls logs the whole `InitializeParams` at INFO (the options carry `llm.apiKey`), and any library may
log a request's headers at DEBUG: a log gets pasted into bug reports, so every record is scrubbed at
the handler — by the shape of a key field (`apiKey`, `api_key`, `Authorization`), and by the value of
every key the daemon was given.
"""

from __future__ import annotations

import logging
import re

MASK = "***"
_FIELD = re.compile(
    r"""(?P<head>["']?(?:api_?key|authorization)["']?\s*[:=]\s*["']?(?:bearer\s+)?)[^"'\s,;}\])]+""",
    re.IGNORECASE,
)
_secrets: set[str] = set()


def hide_secret(value: str | None) -> None:
    """Mask `value` wherever it shows up in a log record from now on."""
    if value:
        _secrets.add(value)


def redact(text: str) -> str:
    text = _FIELD.sub(lambda match: match["head"] + MASK, text)
    for secret in _secrets:
        text = text.replace(secret, MASK)
    return text


class RedactingFilter(logging.Filter):
    """On a handler, so it sees the records of every logger (pygls, aiohttp, ours)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def install(logger: logging.Logger) -> None:
    for handler in logger.handlers:
        handler.addFilter(RedactingFilter())
