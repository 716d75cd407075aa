"""The OpenTelemetry SDK side of telemetry (`telemetry.otel`, the optional `otel` extra): kept out of the
unit tier, which runs without the extra."""

from __future__ import annotations

from mini_agent.plumbing import tracecontext
from mini_agent.telemetry import otel
from opentelemetry.sdk.trace import TracerProvider


def test_a_span_made_current_is_the_trace_context_a_tool_host_hands_on() -> None:
    spans = otel.SdkSpans(TracerProvider())
    span = spans.start("execute_tool echo", 0, {})
    with span.current():
        inside = tracecontext.TRACEPARENT.get()
    assert inside is not None and inside == span.traceparent()
    assert tracecontext.TRACEPARENT.get() is None
