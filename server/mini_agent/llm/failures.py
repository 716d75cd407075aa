"""How a model request fails, in words a person can act on: which server, what happened, what to do.

Also the refusal tests that auto mode and json mode learn from, and the notice a session gets before a
retry. Pure: no I/O here, so the wording is unit-testable and shared by every mode's request path.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import time
from contextvars import ContextVar

from mini_agent.core.contracts import LLMConfig, LLMError, NoticeSink, ToolMode
from mini_agent.llm.replies import BODY_SNIPPET, error_text
from mini_agent.llm.transport import TransportError

log = logging.getLogger(__name__)

# Words in an error body that say the server cannot take the `tools` field.
_TOOLS_REFUSAL = re.compile(r"tool|unsupported|not supported", re.IGNORECASE)
# ... that it cannot take this `response_format` (llama-cpp-python 0.3.36 says so with HTTP 500).
_FORMAT_REFUSAL = re.compile(r"response_format|json_schema", re.IGNORECASE)
# ... that it cannot take image parts (a text-only model, or a server without vision support).
_IMAGES_REFUSAL = re.compile(r"image|vision|multimodal|multi-modal", re.IGNORECASE)
ERROR_BODY_LIMIT = 64 * 1024  # of an error page: enough for the server's own message
REPOINT = (
    " Start the model server, or point mini-agent at a running one: set OPENAI_BASE_URL, pass"
    " --base-url to the CLI, or change the editor's base URL setting (miniAgent.baseUrl in VS Code,"
    " llm.baseUrl in Neovim)."
)


class HTTPStatusError(Exception):
    def __init__(self, status: int, body: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}: {body[:BODY_SNIPPET]}")
        self.status = status
        self.body = body
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status == 429 or self.status >= 500

    @property
    def refuses_tools(self) -> bool:
        if self.status == 429:
            return False
        return self.status in (400, 422) or bool(_TOOLS_REFUSAL.search(self.body))

    @property
    def refuses_images(self) -> bool:
        """A 4xx or 5xx whose words name images: the request's image parts were not taken."""
        return self.status >= 400 and self.status != 429 and bool(_IMAGES_REFUSAL.search(self.body))

    @property
    def refuses_format(self) -> bool:
        if self.status == 429:
            return False
        return self.status in (400, 422) or bool(_FORMAT_REFUSAL.search(self.body))


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def describe(exc: BaseException, config: LLMConfig) -> str:
    """What went wrong on the way to the server, in words."""
    phase = "reading" if isinstance(exc, TimeoutError) else None
    if isinstance(exc, TransportError):
        phase = exc.phase
    if phase is not None:
        return (
            f"no answer within {config.timeout_sec:g} s while {phase} "
            "(llm.timeoutSec; the server may be overloaded, or still loading the model)"
        )
    return str(exc)


def describe_status(exc: HTTPStatusError) -> str:
    """The status with the server's own message (the `error.message` of an OpenAI-style body)."""
    try:
        said = error_text(json.loads(exc.body)["error"])
    except (ValueError, KeyError, TypeError):
        said = exc.body.strip()
    said = " ".join(said.split())[:BODY_SNIPPET]
    hint = ""
    if exc.status in (401, 403):
        hint = " (check the API key: OPENAI_API_KEY or llm.apiKey)"
    elif exc.status == 404:
        hint = " (check the base URL, which usually ends in /v1, and the model name)"
    return f"it answered HTTP {exc.status}" + (f": {said}" if said else "") + hint


# The session's notice sink for this request, set by `generate`: retries happen deep in the transport
# loop, and threading a second callback through every mode's request path would only carry it there.
ON_RETRY: ContextVar[NoticeSink | None] = ContextVar("mini_agent_on_retry", default=None)


def notice_retry(config: LLMConfig, what: str, delay: float, attempt: int) -> None:
    """Say a retry is coming, so a person sees progress instead of silence while the server is away."""
    notice = ON_RETRY.get()
    if notice is not None:
        notice(
            f"The model server at {config.base_url} could not be used: {what}; trying again in {delay:.1f} s "
            f"(try {attempt + 2} of {config.max_retries + 1})."
        )


# Why auto mode moved on to a mode, by that mode: the sentence the notice and the log line carry.
_SETTLED_BECAUSE: dict[ToolMode, str] = {
    "json": "refused `tools` (native function calling)",
    "react": "refused `response_format` (json mode)",
}
IGNORED_FORMAT = "ignored `response_format` and answered in ReAct text"
IGNORED_TOOLS = "ignored `tools` (the model wrote its tool call as text)"


def notice_settled(config: LLMConfig, mode: ToolMode, why: str | None = None) -> None:
    """Say that auto mode settled on `mode` for this server and model, in the daemon's log and to the
    session (as a status message), so a person sees which mode the session goes on in and why."""
    because = why or _SETTLED_BECAUSE.get(mode, "")
    name = "ReAct text" if mode == "react" else mode
    message = (
        f"Auto tool mode: the model server at {config.base_url} {because}; model {config.model} goes on "
        f"in {name} mode (set llm.toolMode to pick one)."
    )
    log.info("%s", message)
    notice = ON_RETRY.get()
    if notice is not None:
        notice(message)


def notice_images_left_out(config: LLMConfig) -> None:
    """Say that this server refused image parts, so images go as a note from now on (log and status)."""
    message = (
        f"The model server at {config.base_url} refused the images for model {config.model}: they are "
        "left out (the model is told so) for this model from now on."
    )
    log.info("%s", message)
    notice = ON_RETRY.get()
    if notice is not None:
        notice(message)


def failure(
    config: LLMConfig, reason: str, attempt: int = 0, status: int | None = None, *, advice: str = ""
) -> LLMError:
    """One message a person can act on: which server, what happened, and what to change."""
    tries = f" (gave up after {attempt + 1} tries)" if attempt else ""
    message = f"The model server at {config.base_url} could not be used: {reason}{tries}."
    return LLMError(message + advice, url=config.base_url.rstrip("/") + "/chat/completions", status=status)
