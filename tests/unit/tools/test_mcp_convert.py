"""The pure MCP mappings: tool names, `$ref` inlining and call results turned into observation text."""

from __future__ import annotations

import base64
import re

import mcp_types as types
from mini_agent.core.contracts import Image
from mini_agent.core.images import MAX_IMAGE_BYTES, MAX_IMAGES, TOO_LARGE
from mini_agent.tools.mcp.convert import inline_refs, result_content, tool_name

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_tool_names_are_prefixed_cleaned_cut_and_unique() -> None:
    assert tool_name("time", "get_current_time", ()) == "time_get_current_time"
    assert tool_name("my server", "read.file", ()) == "my_server_read_file"
    long = tool_name("s", "x" * 100, ())
    assert len(long) == 64 and OPENAI_NAME.match(long)
    assert tool_name("s", "x" * 100, {long}) == long[:62] + "_2"
    assert tool_name("a.b", "c", {"a_b_c", "a_b_c_2"}) == "a_b_c_3"


def test_local_refs_are_inlined_and_recursion_is_cut() -> None:
    schema = {
        "type": "object",
        "properties": {
            "point": {"$ref": "#/$defs/Point", "description": "where"},
            "tree": {"$ref": "#/definitions/Node"},
        },
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "definitions": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}},
            }
        },
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {
            "point": {"type": "object", "properties": {"x": {"type": "number"}}, "description": "where"},
            "tree": {"type": "object", "properties": {"children": {"type": "array", "items": {}}}},
        },
    }
    assert inline_refs({"properties": {}}) == {"properties": {}, "type": "object"}


def test_results_become_one_text() -> None:
    png = base64.b64encode(b"\x89PNG" + bytes(96)).decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(text="first"),
            types.ImageContent(data=png, mime_type="image/png"),
            types.AudioContent(data=base64.b64encode(b"abcde").decode(), mime_type="audio/wav"),
            types.ResourceLink(uri="file:///tmp/a.txt", name="a.txt"),
            types.EmbeddedResource(resource=types.TextResourceContents(uri="mem://n", text="embedded")),
            types.TextContent(text="last"),
        ],
        structured_content={"ok": True},
    )
    text, images = result_content(result)
    assert images == (Image("image/png", png),)
    assert text == (
        "first\n[image: image/png, 100 bytes]\n[audio: audio/wav, 5 bytes]\n[resource: file:///tmp/a.txt]\n"
        'embedded\nlast\n{"ok":true}'
    )
    # structured content already present as a text block is not repeated
    twice = types.CallToolResult(
        content=[types.TextContent(text='{"ok": true}')], structured_content={"ok": True}
    )
    assert result_content(twice)[0] == '{"ok": true}'
    # nor is a value the SDK's servers wrap as {"result": value} (mini-agent mcp's own way too)
    for text, value in (("9", 9), ("hello", "hello"), ("[1, 2]", [1, 2])):
        wrapped = types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content={"result": value}
        )
        assert result_content(wrapped)[0] == text
    other = types.CallToolResult(content=[types.TextContent(text="9")], structured_content={"result": 10})
    assert result_content(other)[0] == '9\n{"result":10}'


def test_a_results_images_go_on_within_the_bounds_and_the_text_says_which_did_not() -> None:
    png = base64.b64encode(b"\x89PNG" + bytes(12)).decode()
    huge = base64.b64encode(bytes(MAX_IMAGE_BYTES + 1)).decode()
    blocks = [
        types.ImageContent(data="not base64!", mime_type="image/png"),
        types.ImageContent(data=png, mime_type="image/bmp"),
        types.ImageContent(data=huge, mime_type="image/png"),
        *(types.ImageContent(data=png, mime_type="image/png") for _ in range(MAX_IMAGES + 1)),
    ]
    text, images = result_content(types.CallToolResult(content=blocks))
    assert images == (Image("image/png", png),) * MAX_IMAGES
    lines = text.split("\n")
    assert lines[0].endswith("not passed on: data is not base64]")
    assert lines[1].startswith("[image: image/bmp, 16 bytes, not passed on: mimeType 'image/bmp' is not")
    assert lines[2].endswith(f"not passed on: {TOO_LARGE}]")
    assert lines[3:-1] == ["[image: image/png, 16 bytes]"] * MAX_IMAGES
    past = f"more than the {MAX_IMAGES} images one result may pass on"
    assert lines[-1] == f"[image: image/png, 16 bytes, not passed on: {past}]"
