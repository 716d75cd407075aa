"""An MCP server over stdio that misbehaves on demand: raw newline-delimited JSON-RPC, no SDK, so it
can send what the SDK would refuse to. Standalone (stdlib only).

    python hostile_mcp_server.py MODE [ARG]

MODE: `silent` (never answers initialize; its pid written to ARG if given), `gated` (answers
initialize only once the file ARG exists, then as `ok` does), `bad-utf8` (an
invalid byte inside its initialize answer), `endless-pages` (every tools/list page has a next
cursor), `deep` (one tool's schema nested 300 deep), `ref-bomb` (one tool's schema a `$ref` bomb 24
deep), `many` (10,000 tools), `fork` (starts a child and a `setsid` grandchild, their pids and its
own written to ARG), `annotated` (tools with readOnlyHint, one also destructiveHint), `big` (tool
`big` answers ARG bytes of text), `storm` (tool `storm` sends 1000 list_changed
notifications, tool `count` answers how many tools/list it was sent). Every mode also lists `ok`,
which answers "ok".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any


def schema(properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties or {}}


def tool(name: str, input_schema: dict[str, Any] | None = None, **annotations: bool) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": name,
        "description": f"the {name} tool",
        "inputSchema": input_schema or schema(),
    }
    if annotations:
        found["annotations"] = annotations
    return found


def deep_schema(levels: int) -> dict[str, Any]:
    node = schema()
    for _ in range(levels):
        node = schema({"a": node})
    return node


def ref_bomb(levels: int) -> dict[str, Any]:
    defs = {
        f"d{i}": schema({"l": {"$ref": f"#/$defs/d{i + 1}"}, "r": {"$ref": f"#/$defs/d{i + 1}"}})
        for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "string"}
    return {**schema({"x": {"$ref": "#/$defs/d0"}}), "$defs": defs}


def tools_of(mode: str) -> list[dict[str, Any]]:
    listed = [tool("ok")]
    if mode == "deep":
        listed.append(tool("deep", deep_schema(300)))
    elif mode == "ref-bomb":
        listed.append(tool("bomb", ref_bomb(24)))
    elif mode == "many":
        listed += [tool(f"t{i}") for i in range(10_000)]
    elif mode == "annotated":
        listed += [
            tool("look", readOnlyHint=True),
            tool("wipe", readOnlyHint=True, destructiveHint=True),
        ]
    elif mode == "big":
        listed.append(tool("big"))
    elif mode == "storm":
        listed += [tool("storm"), tool("count")]
    return listed


def send(message: dict[str, Any], *, raw: bytes | None = None) -> None:
    sys.stdout.buffer.write(raw if raw is not None else json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def answer(request: dict[str, Any], result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def initialized(request: dict[str, Any], mode: str) -> None:
    result = {
        "protocolVersion": request["params"]["protocolVersion"],
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "hostile", "version": "1"},
    }
    if mode != "bad-utf8":
        answer(request, result)
        return
    text = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
    send({}, raw=text.replace(b'"hostile"', b'"host\xffile"') + b"\n")


def spawn_family(pids_file: str) -> None:
    child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    grandchild = subprocess.Popen(
        ["sleep", "301"], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    with open(pids_file, "w") as out:
        out.write(f"{os.getpid()} {child.pid} {grandchild.pid}\n")


def main() -> None:
    mode = sys.argv[1]
    argument = sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "fork":
        spawn_family(argument)
    elif mode == "silent" and argument:
        with open(argument, "w") as out:
            out.write(f"{os.getpid()}\n")
    pages = 0
    for line in sys.stdin.buffer:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue  # a notification
        if method == "initialize":
            if mode == "silent":
                continue
            while mode == "gated" and not os.path.exists(argument):
                time.sleep(0.02)
            initialized(request, mode)
        elif method == "tools/list":
            pages += 1
            first = not (request.get("params") or {}).get("cursor")
            page: dict[str, Any] = {"tools": tools_of(mode) if first else [tool(f"page{pages}")]}
            if mode == "endless-pages":
                page["nextCursor"] = f"c{pages}"
            answer(request, page)
        elif method == "tools/call":
            name = request["params"]["name"]
            text = "x" * int(argument) if name == "big" else str(pages) if name == "count" else name
            if name == "storm":
                changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                send({}, raw=(json.dumps(changed) + "\n").encode() * 1000)
            answer(request, {"content": [{"type": "text", "text": text}]})
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": method}})
    if mode == "silent":
        time.sleep(300)  # and ignores the end of stdin too


if __name__ == "__main__":
    main()
