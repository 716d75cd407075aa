"""Whether and where to send traces, read from an option and the OpenTelemetry environment variables.

Imports nothing of OpenTelemetry: a daemon with no endpoint configured never loads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
TRACES_PATH = "/v1/traces"  # what the OTLP/HTTP exporter appends to a base endpoint
DEFAULT_SERVICE_NAME = "mini-agent"


@dataclass(frozen=True, slots=True)
class Settings:
    """Traces go to `traces_url` (None: where the SDK's own variables say); `capture` puts prompts,
    completions, tool arguments and results on the spans."""

    traces_url: str | None
    capture: bool = False


def settings(endpoint: str | None, capture: bool | None, env: Mapping[str, str]) -> Settings | None:
    """None when nothing names an endpoint, or the SDK is switched off (`OTEL_SDK_DISABLED=true`,
    `OTEL_TRACES_EXPORTER=none`). An `endpoint` option is a base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` is."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    captured = capture if capture is not None else env.get(CAPTURE_ENV, "").strip().lower() == "true"
    if endpoint:
        return Settings(endpoint.rstrip("/") + TRACES_PATH, captured)
    if env.get(TRACES_ENDPOINT_ENV) or env.get(ENDPOINT_ENV):
        return Settings(None, captured)
    return None
