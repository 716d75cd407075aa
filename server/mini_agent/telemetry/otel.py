"""The OpenTelemetry SDK behind `mapper.Spans`: spans with the times they are given, sent by the OTLP
exporter (HTTP/protobuf) in batches. The only module that imports OpenTelemetry (the `otel` extra),
and it is imported only once an endpoint is configured (`config.settings`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mini_agent.plumbing import tracecontext
from mini_agent.telemetry.config import DEFAULT_SERVICE_NAME, Settings
from mini_agent.telemetry.mapper import Attributes

SCOPE = "mini_agent"
ERROR_MESSAGE_CHARS = 200  # a failure's message on its span's status is cut to this


class SdkSpan:
    """`mapper.Span` over an SDK span."""

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def event(self, name: str, at_ns: int, attributes: Attributes | None = None) -> None:
        self.span.add_event(name, attributes or {}, timestamp=at_ns)

    def set(self, attributes: Attributes) -> None:
        self.span.set_attributes(attributes)

    def end(self, at_ns: int, error: str | None = None, message: str | None = None) -> None:
        if error is not None:
            self.span.set_attribute("error.type", error)
            self.span.set_status(Status(StatusCode.ERROR, (message or error)[:ERROR_MESSAGE_CHARS]))
        self.span.end(end_time=at_ns)

    @contextmanager
    def current(self) -> Iterator[None]:
        """This span as the current context: what the MCP SDK injects into a `tools/call`'s `_meta`, and
        what the tool host hands a workspace tool as `TRACEPARENT` (`plumbing.tracecontext`)."""
        token = otel_context.attach(trace.set_span_in_context(self.span))
        carried = tracecontext.TRACEPARENT.set(self.traceparent())
        try:
            yield
        finally:
            tracecontext.TRACEPARENT.reset(carried)
            otel_context.detach(token)

    def traceparent(self) -> str | None:
        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, trace.set_span_in_context(self.span))
        return carrier.get("traceparent")


class SdkSpans:
    """`mapper.Spans` over one tracer provider."""

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer(SCOPE, _version())

    def start(
        self,
        name: str,
        at_ns: int,
        attributes: Attributes,
        *,
        parent: object | None = None,
        traceparent: str | None = None,
        client: bool = False,
    ) -> SdkSpan:
        if isinstance(parent, SdkSpan):
            ctx = trace.set_span_in_context(parent.span)
        elif traceparent:
            ctx = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
        else:
            ctx = otel_context.Context()  # a root: never whatever span happens to be current
        kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
        span = self._tracer.start_span(name, ctx, kind, attributes, start_time=at_ns)
        return SdkSpan(span)


def _version() -> str | None:
    try:
        return version("mini-agent")
    except PackageNotFoundError:  # run from a source tree
        return None


def provider(settings: Settings) -> TracerProvider:
    """A provider exporting to the configured endpoint; the service is `OTEL_SERVICE_NAME` (or
    `OTEL_RESOURCE_ATTRIBUTES`' service.name), else mini-agent."""
    resource_env = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    named = bool(os.environ.get("OTEL_SERVICE_NAME")) or "service.name=" in resource_env
    resource = Resource.create({} if named else {"service.name": DEFAULT_SERVICE_NAME})
    made = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter(endpoint=settings.traces_url) if settings.traces_url else OTLPSpanExporter()
    made.add_span_processor(BatchSpanProcessor(exporter))
    return made


def install_global(settings: Settings) -> TracerProvider:
    """The provider every library's tracer uses in this process (`mini-agent mcp`: the MCP SDK's own
    server spans)."""
    made = provider(settings)
    trace.set_tracer_provider(made)
    return made
