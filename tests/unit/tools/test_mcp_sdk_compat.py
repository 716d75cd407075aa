"""One test per bend of `mini_agent.tools.mcp.sdk_compat`: each fails when an MCP SDK (or anyio) release
changes the private member the bend relies on. In process: the SDK's own functions, a real child process
for anyio's."""

from __future__ import annotations

import inspect
import time
from importlib.metadata import version

import pytest
from mcp.client import stdio
from mcp.client.auth import OAuthClientProvider
from mcp.client.session_group import create_mcp_http_client as groups_client
from mcp.shared import _httpx_utils
from mcp.shared.auth import OAuthClientMetadata, OAuthToken
from mcp.shared.message import SessionMessage
from mini_agent.tools.mcp import sdk_compat
from mini_agent.tools.mcp import stdio as framing
from mini_agent.tools.mcp.tokens import FileTokenStorage


def sdk_parse(line: str) -> object:
    """The SDK's own line parser, whether or not an earlier test (in this process) installed the hooks."""
    return sdk_compat.sdk_own("_parse_line")(line)


def test_the_installed_sdk_is_the_minor_the_bends_were_written_for() -> None:
    assert version("mcp").startswith(sdk_compat.MCP_MINOR + "."), (
        f"mcp {version('mcp')}: re-check every bend in mini_agent/tools/mcp/sdk_compat.py, then move "
        "MCP_MINOR and the pin in pyproject.toml"
    )


def test_the_sdk_still_has_the_hooks_the_transport_bends() -> None:
    from mcp.client import stdio

    source = inspect.getsource(stdio.stdio_client)
    assert "await _create_platform_compatible_process(" in source and "_parse_line(line)" in source
    assert "encoding_error_handler" in stdio.StdioServerParameters.model_fields


def test_bend_1_stdio_client_spawns_through_the_module_global_the_hooks_wrap() -> None:
    source = inspect.getsource(stdio.stdio_client)
    assert "await _create_platform_compatible_process(" in source
    parameters = inspect.signature(sdk_compat.sdk_own("_create_platform_compatible_process")).parameters
    assert list(parameters)[:2] == ["command", "args"]


def test_bend_2_stdio_client_parses_each_line_through_the_module_global_the_hooks_wrap() -> None:
    assert "_parse_line(line)" in inspect.getsource(stdio.stdio_client)
    deep = '{"jsonrpc": "2.0", "id": 1, "result": {"v": ' + "[" * 300 + "]" * 300 + "}}"
    assert isinstance(sdk_parse(deep), Exception)  # the SDK's parser gives up: the bend's reason
    read = sdk_parse('{"jsonrpc": "2.0", "id": 1, "result": {}}')
    assert isinstance(read, SessionMessage)


def test_bends_1_and_2_once_installed_are_ours_wrapping_the_sdks_own() -> None:
    framing.install()
    framing.install()  # idempotent: the SDK's function is wrapped once, not twice
    assert stdio._create_platform_compatible_process.__name__ == "create_framed"
    assert stdio._parse_line.__name__ == "parse_deep"
    assert sdk_compat.sdk_own("_parse_line").__name__ == "_parse_line"  # still the SDK's, kept
    deep = '{"jsonrpc": "2.0", "id": 1, "result": {"v": ' + "[" * 300 + "]" * 300 + "}}"
    assert isinstance(stdio._parse_line(deep), SessionMessage)


def test_bend_3_anyio_keeps_the_asyncio_process_where_the_sdks_shutdown_looks_for_it() -> None:
    from anyio._backends._asyncio import Process as AnyioProcess

    assert 'getattr(process, "_process", None)' in inspect.getsource(stdio._close_subprocess_transport)
    assert "_process" in inspect.signature(AnyioProcess).parameters  # a child process is integration's
    inner = object()
    assert sdk_compat.asyncio_process(AnyioProcess(inner, None, None, None, None, None)) is inner  # type: ignore[arg-type]
    assert sdk_compat.asyncio_process(object()) is None
    framed = framing.FramedProcess(AnyioProcess(inner, None, object(), None, None, None), problem=print)  # type: ignore[arg-type]
    assert sdk_compat.asyncio_process(framed) is inner


@pytest.mark.asyncio
async def test_bend_4_the_provider_learns_when_stored_tokens_expire(tmp_path: object) -> None:
    assert inspect.iscoroutinefunction(OAuthClientProvider._initialize)
    assert "await self._initialize()" in inspect.getsource(OAuthClientProvider._auth_flow)
    storage = FileTokenStorage("https://mcp.example.com/mcp", folder=tmp_path / "oauth")  # type: ignore[operator]
    await storage.set_tokens(OAuthToken(access_token="at", refresh_token="rt", expires_in=60))
    metadata = OAuthClientMetadata(redirect_uris=["http://127.0.0.1:1/callback"])  # type: ignore[list-item]
    plain = OAuthClientProvider("https://mcp.example.com/mcp", metadata, storage)
    aware = sdk_compat.ExpiryAware("https://mcp.example.com/mcp", metadata, storage)
    await plain._initialize()
    await aware._initialize()
    assert plain.context.token_expiry_time is None  # what the SDK alone knows after loading them
    assert aware.context.token_expiry_time is not None
    assert aware.context.token_expiry_time <= time.time() + 60


def test_bend_5_the_sdks_http_client_factory_is_where_its_own_modules_take_it_from() -> None:
    assert groups_client is _httpx_utils.create_mcp_http_client
    assert {"headers", "auth"} <= set(inspect.signature(_httpx_utils.create_mcp_http_client).parameters)
    client = sdk_compat.http_client({"X-Probe": "1"}, None)
    assert client.headers["X-Probe"] == "1" and client.timeout.read is not None
