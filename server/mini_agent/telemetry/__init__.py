"""Traces of every run after the OpenTelemetry GenAI semantic conventions: an adapter.

`config` (the settings read from the options and the environment), `mapper` (the core's events as
spans: one `invoke_agent` span per prompt turn, a `chat` span per model request, an `execute_tool` span
per call), `replay` (a stored session as the same events, timed from the store), `live` (a workspace's
tracing while it runs), `otel` (the OpenTelemetry SDK and its OTLP exporter: the only module that
imports them, and only once an endpoint is configured). May import `core` and `plumbing`.
"""
