"""Loop detection as pure functions: how often in a row the model has asked for the same call, and
whether a call asks again for a result the model already has."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from mini_agent.core.contracts import Observation, ToolCall, ToolSpec
from mini_agent.core.session import StepRecord

_SAME = (
    "with exactly these arguments earlier in this task, and nothing since can have changed its result. "
    "It returned: {output}\nUse that result: call another tool or other arguments, or {finish}."
)
KNOWN_NOTE = "Not run again: {name} was called " + _SAME
# for a repeat the model is not shown again (`hide_repeats`): the note names the call
HIDDEN_NOTE = "You asked again for {name} with {arguments}. It was not run again: it was called " + _SAME
_KNOWN_LIMIT = 300  # characters of the earlier result shown again


def canonical(call: ToolCall) -> str:
    """Name plus arguments with sorted keys: `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same call."""
    return call.name + "\0" + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


def streaks(earlier: Sequence[Sequence[ToolCall]], calls: Sequence[ToolCall]) -> list[int]:
    """For each of `calls` (one step's), how many times in a row it has now been asked for: itself, the
    identical calls before it in its step, and one for each step just before (`earlier`, oldest first)
    that asked for it too. A step that repeats the previous step's calls, alone or beside others, is a
    repeat of each of them; a step without it ends the streak."""
    out: list[int] = []
    for position, call in enumerate(calls):
        key = canonical(call)
        streak = 1 + sum(1 for before in calls[:position] if canonical(before) == key)
        for step in reversed(earlier):
            same = sum(1 for previous in step if canonical(previous) == key)
            if not same:
                break
            streak += same
        out.append(streak)
    return out


def known_result(
    earlier: Sequence[StepRecord],
    before: Sequence[ToolCall],
    call: ToolCall,
    changes_state: Callable[[str], bool],
) -> Observation | None:
    """`llm.harness.knownResults`: the successful result of an identical call made earlier in this
    turn (`earlier`, its steps oldest first), when no call since may have changed what it returns; None
    when the call is new, or may answer otherwise now. `before` are the calls ahead of `call` in its own
    step; `changes_state(name)` says whether a tool may change what others return (it needs approval, or
    is declared not read-only or destructive). A call to such a tool that succeeded already is known too:
    doing it again would do it twice. Pure."""
    key = canonical(call)
    if any(changes_state(other.name) for other in before):
        return None
    for step in reversed(earlier):
        results = {obs.call_id: obs for obs in step.observations}
        for other in reversed(step.tool_calls):
            found = results.get(other.id)
            if canonical(other) == key and found is not None and not found.is_error:
                return found
            if changes_state(other.name):
                return None
    return None


def known_calls(
    earlier: Sequence[StepRecord], record: StepRecord, tools: Callable[[str], ToolSpec | None]
) -> list[tuple[ToolCall, Observation]]:
    """`llm.harness.knownResults`: each call of `record` (the step just asked for, `earlier` the turn's
    steps before it) identical to one whose result the model already has (`known_result`), with that
    result. A call already answered, to a tool the daemon does not have, or to one declared open-world
    is left to run (an MCP tool is open-world, and may write, unless its server says otherwise: MCP's
    defaults)."""
    answered = {obs.call_id for obs in record.observations}

    def changes_state(name: str) -> bool:
        spec = tools(name)
        return spec is None or writes(spec)

    known: list[tuple[ToolCall, Observation]] = []
    for position, call in enumerate(record.tool_calls):
        spec = tools(call.name)
        if call.id in answered or spec is None or _hints(spec).get("openWorldHint"):
            continue
        found = known_result(earlier, record.tool_calls[:position], call, changes_state)
        if found is not None:
            known.append((call, found))
    return known


def known_note(call: ToolCall, found: Observation, finish: str, *, hidden: bool = False) -> Observation:
    """The error observation that stands for the run of `call`: the earlier result, and to use it;
    `hidden`: the model is not shown its repeat again, so the note names the call (`hide_repeats`)."""
    arguments = _cut(json.dumps(call.arguments, ensure_ascii=False, default=str))
    template = HIDDEN_NOTE if hidden else KNOWN_NOTE
    text = template.format(name=call.name, arguments=arguments, output=_cut(found.output), finish=finish)
    return Observation(call.id, call.name, text, is_error=True)


def _cut(text: str) -> str:
    return text[:_KNOWN_LIMIT] + (" …" if len(text) > _KNOWN_LIMIT else "")


def writes(spec: ToolSpec) -> bool:
    """Whether a tool may change state: it needs approval, or is declared not read-only, or destructive
    (an MCP tool is, unless its server says otherwise)."""
    hints = _hints(spec)
    return spec.requires_approval or hints.get("readOnlyHint") is False or bool(hints.get("destructiveHint"))


# MCP's defaults for the hints a server leaves out (the spec's `ToolAnnotations`): such a tool may write,
# destroy and reach the world. A workspace function's hints are ours: unsaid is unknown.
_MCP_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}


def _hints(spec: ToolSpec) -> dict[str, bool]:
    said = dict(spec.hints)
    return {**_MCP_DEFAULTS, **said} if spec.mcp_server is not None else said
