"""Stored sessions as traces (`mini-agent sessions export --otlp`): each session read from the
workspace's store, replayed through the live run's span mapper with the times the store holds, and
sent to the OTLP endpoint the environment names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mini_agent.core.errors import AgentError
from mini_agent.core.session import AgentSession
from mini_agent.store.sqlite import SqliteStore
from mini_agent.telemetry.config import ENDPOINT_ENV, settings
from mini_agent.telemetry.mapper import SpanMapper
from mini_agent.telemetry.replay import replay

PAGE = 500  # sessions listed per store query when every session is exported

NO_ENDPOINT = (
    f"no OTLP endpoint: set {ENDPOINT_ENV} (e.g. http://127.0.0.1:6006 for a local Phoenix) "
    "or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)


class ExportError(AgentError):
    """The export could not start: no endpoint, or a session the store does not hold."""


def stored(store: SqliteStore, session_ids: Sequence[str]) -> list[AgentSession]:
    """The sessions named, or every stored one (oldest first) when none is named."""
    ids = list(session_ids)
    if not ids:
        offset, total = 0, 1
        while offset < total:
            rows, total = store.list_sessions(None, PAGE, offset)
            ids += [row.session_id for row in rows]
            offset += PAGE
        ids.reverse()
    sessions: list[AgentSession] = []
    for session_id in ids:
        session = store.load(session_id)
        if session is None:
            raise ExportError(f"session_ids: no stored session {session_id!r} in {store.path}")
        sessions.append(session)
    return sessions


def export(root: Path, session_ids: Sequence[str], env: Mapping[str, str] = os.environ) -> list[str]:
    """Send the sessions' spans; returns the ids exported. Content is captured as the live run's
    switch says (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`)."""
    found = settings(None, None, env)
    if found is None:
        raise ExportError(NO_ENDPOINT)
    with SqliteStore.for_workspace(root) as store:
        sessions = stored(store, session_ids)
    from mini_agent.telemetry.otel import SdkSpans, provider

    tracer = provider(found)
    held = {session.session_id: session for session in sessions}
    mapper = SpanMapper(SdkSpans(tracer), held.get, capture=found.capture)
    try:
        for session in sessions:
            replay(mapper, session)
    finally:
        tracer.shutdown()
    return list(held)
