"""`mini-agent acp`: the Agent Client Protocol (v1) front door, NDJSON on stdio.

The official SDK (`acp`) routes and validates the methods; this package adds what it leaves out:
answers to lines that are not JSON-RPC (`transport.py`), `session/delete`, `$/cancel_request`
(`requests.py`), readable error messages (ACP clients show the message and throw stderr away), and a
clean exit on SIGTERM, which is how editors end an agent.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from acp import Agent, RequestError
from acp.agent.router import build_agent_router
from acp.connection import Connection
from acp.schema import DeleteSessionRequest
from pydantic import ValidationError

from mini_agent.acp.agent import MiniAgent
from mini_agent.acp.requests import CANCEL_REQUEST, InFlight
from mini_agent.acp.transport import LineTransport
from mini_agent.core.errors import AgentError, error_data
from mini_agent.core.strict import invalid
from mini_agent.plumbing import eventloop, jsonrpc
from mini_agent.plumbing.pipes import SafeWriter
from mini_agent.plumbing.stdout import claim_stdout

if TYPE_CHECKING:
    from mini_agent.app.model_choices import ModelAccess

log = logging.getLogger("mini_agent.acp")
READ_LIMIT = 50 * 1024 * 1024  # one message line at most, as the SDK's own stdio reader allows

Handler = Callable[[str, Any, bool], Awaitable[Any]]


def handler_for(agent: MiniAgent) -> Handler:
    """The SDK's router, plus session/delete and $/cancel_request, with every refusal as a JSON-RPC
    error in words."""
    # the router routes the methods the agent has (the rest answer method-not-found); session/resume
    # counts as "unstable" in this SDK release
    router = build_agent_router(cast(Agent, agent), use_unstable_protocol=True)
    router.route_request("session/delete", DeleteSessionRequest, agent, "delete_session")
    in_flight = InFlight(agent.cancel)

    async def handle(method: str, params: Any, is_notification: bool) -> Any:
        if method == CANCEL_REQUEST and is_notification:
            return await in_flight.cancel(params)
        try:
            if is_notification:
                return await router(method, params, is_notification)
            with in_flight.handling(method, params):
                return await router(method, params, is_notification)
        except ValidationError as exc:
            raise _request_error(invalid(method, exc)) from None
        except AgentError as exc:
            raise _request_error(exc) from None
        except RequestError as exc:
            if exc.code == jsonrpc.METHOD_NOT_FOUND:
                raise RequestError(exc.code, f"Method not found: {method}", exc.data) from None
            raise

    return handle


def _request_error(exc: AgentError) -> RequestError:
    return RequestError(exc.code, str(exc), error_data(exc))


def connect(
    reader: asyncio.StreamReader,
    writer: SafeWriter,
    *,
    trusted: bool,
    env: dict[str, str] | None = None,
    access: ModelAccess | None = None,
) -> tuple[MiniAgent, Connection]:
    """The door over one line stream: the agent and its connection, not listening yet
    (`connection.main_loop()` serves; `agent.aclose()` then `connection.close()` end it)."""
    transport = LineTransport(reader, writer)
    agent = MiniAgent(transport, trusted=trusted, env=env, access=access)
    connection = Connection(handler_for(agent), transport, listening=False)
    agent.connection = connection
    return agent, connection


async def serve(reader: asyncio.StreamReader, writer: SafeWriter, *, trusted: bool) -> None:
    """Serve until the input ends or SIGTERM / SIGINT; then take every tool host down with us."""
    agent, connection = connect(reader, writer, trusted=trusted)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    listening = asyncio.ensure_future(connection.main_loop())
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((listening, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        await agent.aclose()
        await connection.close()
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


async def _stdio(wire_out: Any, trusted: bool) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await serve(reader, SafeWriter(wire_out, newline=True), trusted=trusted)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mini-agent acp", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--trust",
        action="store_true",
        help="trust the workspaces this agent opens: import the tools registered there before and the "
        "tools its configuration file names (default: neither; starting an agent does not vouch for "
        "a cloned repository's code)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Only ACP messages may reach the real stdout (`plumbing.stdout.claim_stdout`)."""
    args = build_parser().parse_args(argv)
    wire_out = claim_stdout("mini-agent acp")
    eventloop.run(_stdio(wire_out, args.trust))
