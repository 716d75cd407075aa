"""Sandbox drills: what a confined tool cannot do, tried for real in a real tool host on this kernel.

Each drill runs its tool in the host twice where it can, confined as the tool's declarations say and
once as a tool that may (an `open_world` tool, or the sandbox off), so that a refusal is the sandbox's
and not the machine's. The host's temp folder is a folder of the test (TMPDIR), so "outside the
workspace" is outside every root a tool may write to.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from mini_agent.tools import sandbox
from mini_agent.tools.host import CallResult, ToolHost

TOOLS = '''
import os, socket, subprocess
from pathlib import Path

def tcp(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        return conn.recv(16).decode()

def udp(port: int) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(b"ping", ("127.0.0.1", port))
        return sock.recvfrom(16)[0].decode()

def resolve(name: str) -> str:
    return socket.getaddrinfo(name, 443)[0][4][0]

def bash_tcp(port: int) -> str:
    done = subprocess.run(["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}; head -c 5 <&3"],
                          capture_output=True, text=True, timeout=10)
    if done.returncode:
        raise OSError(done.stderr.strip())
    return done.stdout

def write(path: str, text: str) -> str:
    Path(path).write_text(text)
    return "written"

def nested(folder: str) -> str:
    """Confine a child again, as `mini-agent mcp` run as an MCP server confines its own tool hosts."""
    import sys
    code = ("import sys; from pathlib import Path; from mini_agent.tools import sandbox; "
            "sandbox.apply(sandbox.for_tool(Path(sys.argv[1]), '/tmp', read_only=True, open_world=False)); "
            "Path(sys.argv[1], 'inner.txt').write_text('x')")
    done = subprocess.run([sys.executable, "-c", code, folder], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return done.stderr.strip().splitlines()[-1] if done.returncode else "confined again, and wrote"

def no_new_privs() -> str:
    own = [l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("NoNewPrivs")]
    child = subprocess.run(["grep", "NoNewPrivs", "/proc/self/status"], capture_output=True, text=True)
    return f"{own[0].split()[1]} {child.stdout.split()[1]}"
'''

CONFINED = {"readOnlyHint": False, "openWorldHint": False}
OPEN_WORLD = {"openWorldHint": True}
READ_ONLY = {"readOnlyHint": True}


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    workspace, temp, outside = tmp_path / "ws", tmp_path / "tmp", tmp_path / "outside"
    for folder in (workspace, temp, outside, workspace / ".git", workspace / ".mini-agent"):
        folder.mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / "tools.py").write_text(TOOLS)
    monkeypatch.setenv("TMPDIR", str(temp))
    yield workspace, outside


@pytest_asyncio.fixture
async def host(roots: tuple[Path, Path]) -> AsyncIterator[ToolHost]:
    tool_host = ToolHost(roots[0], max_memory_mb=0)
    yield tool_host
    await tool_host.aclose()


async def run(
    host: ToolHost, root: Path, function: str, hints: dict[str, bool], **arguments: object
) -> CallResult:
    return await host.call(
        root / "tools.py", function, tool_name=function, arguments=arguments, timeout=30, hints=hints
    )


async def refused_then_reached(
    host: ToolHost, root: Path, function: str, refusal: tuple[str, ...], answer: str, **arguments: object
) -> None:
    """Confined, the call fails with one of the `refusal` words; as an open_world tool it gives `answer`."""
    refused = await run(host, root, function, CONFINED, **arguments)
    assert refused.is_error and any(word in refused.output for word in refusal), refused.output
    reached = await run(host, root, function, OPEN_WORLD, **arguments)
    assert (reached.is_error, reached.output) == (False, answer)


@pytest_asyncio.fixture
async def tcp_listener() -> AsyncIterator[int]:
    async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(greet, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


@pytest.fixture
def udp_echo() -> Iterator[int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    loop = asyncio.get_event_loop()

    def echo() -> None:
        _, peer = sock.recvfrom(16)
        sock.sendto(b"pong", peer)

    loop.add_reader(sock.fileno(), echo)
    yield sock.getsockname()[1]
    loop.remove_reader(sock.fileno())
    sock.close()


@pytest.mark.asyncio
async def test_a_tool_without_open_world_cannot_connect_over_tcp_and_an_open_world_one_can(
    host: ToolHost, roots: tuple[Path, Path], tcp_listener: int
) -> None:
    refusal = ("Permission denied", "unreachable")
    await refused_then_reached(host, roots[0], "tcp", refusal, "hello", port=tcp_listener)


@pytest.mark.asyncio
async def test_a_tool_without_open_world_cannot_send_udp(
    host: ToolHost, roots: tuple[Path, Path], udp_echo: int
) -> None:
    await refused_then_reached(host, roots[0], "udp", ("unreachable",), "pong", port=udp_echo)


@pytest.mark.asyncio
async def test_a_tool_without_open_world_cannot_resolve_a_name(
    host: ToolHost, roots: tuple[Path, Path]
) -> None:
    reached = await run(host, roots[0], "resolve", OPEN_WORLD, name="pypi.org")
    assert not reached.is_error, f"no name resolves here, so the drill proves nothing: {reached.output}"
    refused = await run(host, roots[0], "resolve", CONFINED, name="pypi.org")
    assert refused.is_error and "gaierror" in refused.output


@pytest.mark.asyncio
async def test_bash_dev_tcp_is_refused_without_open_world(
    host: ToolHost, roots: tuple[Path, Path], tcp_listener: int
) -> None:
    await refused_then_reached(host, roots[0], "bash_tcp", ("/dev/tcp",), "hello", port=tcp_listener)


@pytest.mark.asyncio
async def test_writes_go_only_to_the_workspace_and_the_temp_folder(
    host: ToolHost, roots: tuple[Path, Path]
) -> None:
    workspace, outside = roots
    inside = await run(host, workspace, "write", CONFINED, path=str(workspace / "notes.txt"), text="kept")
    in_temp = os.path.join(os.environ["TMPDIR"], "t")
    temp = await run(host, workspace, "write", CONFINED, path=in_temp, text="t")
    assert (inside.output, temp.output) == ("written", "written")
    targets = (outside / "escape.txt", workspace / ".git" / "config", workspace / ".mini-agent" / "x.toml")
    for target in targets:
        refused = await run(host, workspace, "write", CONFINED, path=str(target), text="evil")
        denied = "Permission denied" in refused.output or "Read-only" in refused.output
        assert refused.is_error and denied, target
    assert not (outside / "escape.txt").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.asyncio
async def test_a_protected_file_made_after_the_host_started_is_read_only_to_the_next_call(
    host: ToolHost, roots: tuple[Path, Path]
) -> None:
    workspace, _ = roots
    first = await run(host, workspace, "write", CONFINED, path=str(workspace / "a.txt"), text="a")
    assert first.output == "written" and host.running == 1  # a host runs, started before the file existed
    (workspace / ".env.local").write_text("SECRET=1\n")
    refused = await run(host, workspace, "write", CONFINED, path=str(workspace / ".env.local"), text="evil")
    assert refused.is_error and "Read-only" in refused.output, refused.output
    assert (workspace / ".env.local").read_text() == "SECRET=1\n"


@pytest.mark.asyncio
async def test_a_symlink_swapped_in_after_approval_does_not_lead_a_write_outside(
    host: ToolHost, roots: tuple[Path, Path]
) -> None:
    workspace, outside = roots
    (workspace / "report.txt").write_text("old")  # what the person saw the call would write
    (workspace / "report.txt").unlink()
    (workspace / "report.txt").symlink_to(outside / "stolen.txt")  # swapped in before the call runs
    refused = await run(host, workspace, "write", CONFINED, path=str(workspace / "report.txt"), text="x")
    assert refused.is_error and "Permission denied" in refused.output
    assert not (outside / "stolen.txt").exists()


@pytest.mark.asyncio
async def test_a_read_only_tool_cannot_write_even_inside_the_workspace(
    host: ToolHost, roots: tuple[Path, Path]
) -> None:
    refused = await run(host, roots[0], "write", READ_ONLY, path=str(roots[0] / "x.txt"), text="x")
    assert refused.is_error and "Permission denied" in refused.output
    assert "Note: this tool runs in the sandbox (no writes; no network)" in refused.output  # said why
    assert not (roots[0] / "x.txt").exists()


@pytest.mark.asyncio
async def test_the_tool_and_what_it_starts_run_with_no_new_privileges(
    host: ToolHost, roots: tuple[Path, Path]
) -> None:
    assert (await run(host, roots[0], "no_new_privs", CONFINED)).output == "1 1"


@pytest.mark.asyncio
async def test_a_sandbox_inside_the_sandbox_confines_further(
    host: ToolHost, roots: tuple[Path, Path]
) -> None:
    said = (await run(host, roots[0], "nested", CONFINED, folder=str(roots[0]))).output
    assert "PermissionError" in said and "Permission denied" in said  # the inner read-only one held
    assert not (roots[0] / "inner.txt").exists()


@pytest.mark.asyncio
async def test_a_kernel_without_landlock_fails_the_call_by_name_rather_than_running_it_unconfined(
    roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.PRETEND_ENV, "no-landlock")
    tool_host = ToolHost(roots[0])
    try:
        result = await run(tool_host, roots[0], "write", CONFINED, path=str(roots[0] / "x.txt"), text="x")
    finally:
        await tool_host.aclose()
    assert result.is_error
    assert "offers no Landlock" in result.output and 'tools.sandbox = "off"' in result.output
    assert not (roots[0] / "x.txt").exists()


@pytest.mark.asyncio
async def test_with_the_sandbox_off_a_tool_runs_unconfined(roots: tuple[Path, Path]) -> None:
    tool_host = ToolHost(roots[0], confine=False)
    try:
        result = await run(tool_host, roots[0], "write", READ_ONLY, path=str(roots[1] / "x.txt"), text="x")
    finally:
        await tool_host.aclose()
    assert result.output == "written" and (roots[1] / "x.txt").read_text() == "x"


FIXTURE = Path(__file__).parents[2] / "support" / "mcp_fixture_server.py"


@pytest.mark.asyncio
@pytest.mark.parametrize("network", [False, True])
async def test_a_stdio_mcp_server_reaches_the_network_only_when_its_entry_allows_it(
    roots: tuple[Path, Path], tcp_listener: int, network: bool
) -> None:
    from mini_agent.core.asking import Nobody
    from mini_agent.core.contracts import ToolCall
    from mini_agent.tools.mcp import McpSource
    from mini_agent.tools.mcp.config import StdioMcpServer

    server = StdioMcpServer(
        name="fixture", command=sys.executable, args=[str(FIXTURE), str(roots[1] / "pids")],
        requires_approval=False, network=network,
    )  # fmt: skip
    source = McpSource(
        roots[0], timeout_sec=30.0, max_output_bytes=4096, reserved=lambda: (),
        report=lambda session, message: None, tools_changed=lambda: None, person=Nobody(),
    )  # fmt: skip
    try:
        await source.acquire("s", [server], print)
        result = await source.call(ToolCall("c", "fixture_connect", {"port": tcp_listener}), "s", timeout=30)
    finally:
        await source.aclose()
    if network:
        assert result.output == "connected"
    else:
        assert result.output.startswith("refused:")
        assert "Permission denied" in result.output or "unreachable" in result.output
