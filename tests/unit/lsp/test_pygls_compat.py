"""One test per bend of `mini_agent.lsp.pygls_compat`: each fails when a pygls release changes the
private member the bend relies on. In memory only: a fresh pygls server, a BytesIO writer."""

from __future__ import annotations

import inspect
import threading
from importlib.metadata import version
from typing import Any

import pytest
from lsprotocol import types
from mini_agent.lsp import pygls_compat
from pygls.exceptions import JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol, default_converter
from pygls.server import JsonRPCServer

from ...support.writer import Sink


class Recording(pygls_compat.CompatProtocol):
    """The compat protocol, noting each response pygls hands `_send_response`."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.responses: list[tuple[Any, Any, Any]] = []

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        self.responses.append((msg_id, result, error))
        super()._send_response(msg_id, result, error)


def make_server(protocol_cls: type[LanguageServerProtocol] = Recording) -> tuple[LanguageServer, Sink]:
    server = LanguageServer("compat-probe", "0", protocol_cls=protocol_cls)
    sink = Sink()
    server.protocol.set_writer(sink, include_headers=True)
    return server, sink


def initialize(server: LanguageServer, msg_id: int = 1, **capabilities: Any) -> None:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
               "params": {"processId": None, "rootUri": "file:///tmp", "capabilities": capabilities}}
    server.protocol.handle_message(server.protocol.structure_message(message))


def test_pygls_is_the_minor_these_checks_were_written_for() -> None:
    assert version("pygls").startswith(pygls_compat.PYGLS_MINOR + "."), (
        f"pygls {version('pygls')}: re-check every bend in mini_agent/lsp/pygls_compat.py, then move "
        "PYGLS_MINOR and the pin in pyproject.toml"
    )


def test_bend_1_send_data_writes_one_json_value_as_one_frame() -> None:
    assert list(inspect.signature(JsonRPCProtocol._send_data).parameters) == ["self", "data"]
    server, sink = make_server()
    message = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    pygls_compat.send_raw(server.protocol, message)
    assert sink.messages() == [message]  # the null id survives


def test_bend_2_send_response_is_how_pygls_answers_every_request() -> None:
    assert list(inspect.signature(JsonRPCProtocol._send_response).parameters) == [
        "self", "msg_id", "result", "error"
    ]
    server, sink = make_server()
    assert isinstance(server.protocol, Recording)
    initialize(server, 7)  # pygls' own answer goes through _send_response ...
    ((msg_id, result, error),) = server.protocol.responses
    assert (msg_id, error) == (7, None) and isinstance(result, types.InitializeResult)
    pygls_compat.send_error(server.protocol, 8, JsonRpcInvalidRequest("no"))  # ... and so does ours
    answers = sink.messages()
    assert [answer["id"] for answer in answers] == [7, 8]
    assert answers[1]["error"]["code"] == JsonRpcInvalidRequest.CODE


def test_bend_2_an_early_answered_initialize_is_checked_and_not_sent_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, sink = make_server(pygls_compat.CompatProtocol)
    assert isinstance(server.protocol, pygls_compat.CompatProtocol)
    server.protocol.answered_early = {"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {}}}
    with caplog.at_level("ERROR", logger="mini_agent"):
        initialize(server, 1)
    assert sink.messages() == [] and server.protocol.answered_early is None
    assert "$.capabilities.positionEncoding" in caplog.text  # the difference is in the log
    initialize(server, 2)  # only that one id is held back
    assert [answer["id"] for answer in sink.messages()] == [2]


def test_bend_3_include_headers_is_what_set_writer_was_told() -> None:
    server, _ = make_server()
    assert pygls_compat.frames_with_headers(server.protocol)
    server.protocol.set_writer(Sink(), include_headers=False)
    assert not pygls_compat.frames_with_headers(server.protocol)


def test_bend_4_serialize_message_renders_lsprotocol_values_as_pygls_writes_them() -> None:
    assert list(inspect.signature(JsonRPCProtocol._serialize_message).parameters) == ["self", "data"]
    server, _ = make_server()
    result = types.InitializeResult(
        capabilities=types.ServerCapabilities(position_encoding=types.PositionEncodingKind.Utf8),
        server_info=types.ServerInfo(name="x", version="1"),
    )
    assert pygls_compat.plain_json(server.protocol, result) == {
        "capabilities": {"positionEncoding": "utf-8"}, "serverInfo": {"name": "x", "version": "1"}
    }


def test_bend_5_workspace_is_none_until_initialize() -> None:
    server, _ = make_server()
    assert not pygls_compat.initialized(server.protocol)
    with pytest.raises(RuntimeError):
        server.protocol.workspace  # noqa: B018 - the public way raises instead
    initialize(server)
    assert pygls_compat.initialized(server.protocol)


def test_bend_6_shutdown_sets_the_stop_event() -> None:
    server = JsonRPCServer(JsonRPCProtocol, default_converter)
    assert server._stop_event is None  # nothing of pygls' own to replace before start_io
    stop = threading.Event()
    pygls_compat.install_stop_event(server, stop)
    server.shutdown()  # type: ignore[no-untyped-call]
    assert stop.is_set()


def test_bend_7_lsp_initialize_is_a_builtin_generator_feature_a_subclass_may_override() -> None:
    assert inspect.isgeneratorfunction(LanguageServerProtocol.lsp_initialize)
    assert getattr(LanguageServerProtocol.lsp_initialize, "method_name", None) == types.INITIALIZE
    server, sink = make_server()
    assert server.protocol.fm.builtin_features[types.INITIALIZE] == server.protocol.lsp_initialize
    initialize(server)
    (answer,) = sink.messages()
    assert answer["result"]["capabilities"]["experimental"]["agent"]["protocolVersion"] == 1
