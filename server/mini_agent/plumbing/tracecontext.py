"""The W3C trace context of the work in progress, carried across layers without naming a tracer.

The telemetry adapter sets `TRACEPARENT` around a tool call it traces; the tool host hands it to the
tool's process as the `TRACEPARENT` environment variable (OpenTelemetry's environment carrier), so a
tool that makes its own spans joins the trace. Unset (None) when nothing traces: nothing is sent.
"""

from __future__ import annotations

from contextvars import ContextVar

TRACEPARENT: ContextVar[str | None] = ContextVar("traceparent", default=None)
ENV = "TRACEPARENT"
