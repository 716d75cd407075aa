"""Model ids are data from another program, on the ACP door: ids holding an escape sequence, a NUL, a
newline or a right-to-left override, listed by the model server, never reach the `model` config
option's choices, and `session/set_config_option` refuses such a name with -32602 naming `value`.
`mini-agent acp` over real stdio, the scripted model server listing them."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from ...support.acp import acp_agent, dump, workspace_config
from ...support.model_list import ListingServer

HOSTILE = (
    "clip\x1b]52;c;aGVsbG8=\x07board",  # OSC 52: text onto the clipboard
    "nul\x00id",
    "two\ncurrent model: forged",
    "invoice\u202etxt.exe",  # shown as invoiceexe.txt
)


@pytest.mark.asyncio
async def test_model_ids_with_control_or_bidi_characters_never_reach_the_config_options(
    workspace: Path,
) -> None:
    async with ListingServer(models=("replay", *HOSTILE, "large")) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, _recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            refusals: list[RequestError] = []
            for name in HOSTILE:
                with pytest.raises(RequestError) as refused:
                    await conn.set_config_option(config_id="model", session_id=sid, value=name)
                refusals.append(refused.value)
    [offered] = [o for o in dump(session)["configOptions"] if o["id"] == "model"]
    assert [o["value"] for o in offered["options"]] == ["replay", "large"]
    for refusal in refusals:
        assert refusal.code == -32602 and "value" in str(refusal) and "not a model name" in str(refusal)
