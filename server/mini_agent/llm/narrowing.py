"""What json mode's grammar learns from the loop: the next turn's tool schemas narrowed so that what
cannot be right cannot be written (`llm.harness`).

- `unspent` (`pruneRepeats`): a call identical to one whose result the model already has in this turn;
- `without_arguments` (`repairHints`): optional arguments that failed twice away from their defaults
  (`core.repair.pinned` names them), so the call takes the defaults; and tools that failed twice since
  their result came (`core.repair.resting`) are not offered for a turn;
- `grounded` (`groundedValues`): an argument that took a made-up value (`core.repair.grounded`) is an
  `enum` of the values the turn has seen;
- the budget's last turn (`lastStep`, `core.windup`): no tool is offered, the turn is the answer;
- `holding` (`finalCheck`): the pattern that makes the answer after the final check hold the words it
  left out.

The prompt's tool list never changes (the server's prefix cache); only `response_format` does. Every
pattern here is written for llama.cpp's schema-to-grammar compiler, which passes escapes on to its
grammar and crashes on most of them: special characters go alone in a class (`[.]`). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mini_agent.core.contracts import Message, Role, ToolSpec, user_turn


@dataclass(frozen=True, slots=True)
class Narrowing:
    """What the loop holds one json turn to, beyond the tools' own schemas: `must_hold`, words its final
    answer must hold (the final check's); `leave_out`, per tool, arguments its call may not set (the
    repair hints': they failed twice away from their defaults, so the call takes the defaults); `rest`,
    tools it may not call (the repair hints': each failed twice since the model had its result);
    `answer_only`, the turn may not call a tool at all (the step budget's last turn); `only`, per tool
    and argument, the values it may take (the grounded values)."""

    must_hold: tuple[str, ...] = ()
    leave_out: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    rest: tuple[str, ...] = ()
    answer_only: bool = False
    only: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)


NOT_NARROWED = Narrowing()


def offered(
    tools: Sequence[ToolSpec], messages: Sequence[Message], narrow: Narrowing, *, prune_repeats: bool
) -> list[ToolSpec]:
    """The tools as the next json turn's grammar offers them: spent calls out (`unspent`, when
    `prune_repeats`), pinned arguments out (`without_arguments`), resting tools out; none on an
    answer-only turn."""
    if narrow.answer_only:
        return []
    narrowed = grounded(without_arguments(tools, narrow.leave_out), narrow.only)
    narrowed = unspent(narrowed, messages) if prune_repeats else narrowed
    return [tool for tool in narrowed if tool.name not in narrow.rest]


# Values a pruned string argument may be excluded from: plain names and paths, short enough that the
# pattern the grammar compiles stays small. Anything else leaves the tool as it was.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_./ :@+-]{0,80}")
_MAX_EXCLUDED = 16
_GAP = 80  # characters an answer that must hold words may write before each of them
# a character of a JSON string the model may write without an escape (no quote, backslash or control
# character, as llama.cpp's own string rule; GBNF knows `\x` in a class): the patterns' "any"
_ANY = r'[^"\\\x7F\x00-\x1F]'
# … and one that cannot be part of a word in any script (ASCII space and punctuation, no quote or
# backslash): what stands between a held word and its neighbours ("该metrics.py" holds no file name)
_APART = "[ !#-/:-@{-~]"


def unspent(tools: Sequence[ToolSpec], messages: Sequence[Message]) -> list[ToolSpec]:
    """`tools` as the next json turn may call them: a call identical to one whose result the model
    already has in this turn cannot be written.

    What the grammar can express exactly: a tool without arguments, once called, is left out; a tool
    with one free string argument may not take a value already used (a `pattern` excluding those
    values, the default counted for a call that left it out) unless the call also sets another argument
    (a boolean to the value other than its default). Other tools are offered as they are; the loop
    detector still notes their repeats. The prompt's tool list is not changed (the prefix cache).
    """
    spent = _spent_calls(messages)
    offered: list[ToolSpec] = []
    for tool in tools:
        calls = spent.get(tool.name)
        if not calls:
            offered.append(tool)
            continue
        schema = _excluding(tool.input_schema, calls)
        if schema is not None:
            offered.append(ToolSpec(tool.name, tool.description, schema))
    return offered


def without_arguments(tools: Sequence[ToolSpec], leave_out: Mapping[str, Sequence[str]]) -> list[ToolSpec]:
    """`tools` with the named optional arguments gone from their schemas (a required one stays)."""
    offered: list[ToolSpec] = []
    for tool in tools:
        names = set(leave_out.get(tool.name, ())) - set(tool.input_schema.get("required", ()))
        properties = tool.input_schema.get("properties")
        if names and isinstance(properties, dict):
            kept = {key: value for key, value in properties.items() if key not in names}
            schema = {**tool.input_schema, "properties": kept, "additionalProperties": False}
            tool = replace(tool, input_schema=schema)
        offered.append(tool)
    return offered


def grounded(tools: Sequence[ToolSpec], only: Mapping[str, Mapping[str, Sequence[str]]]) -> list[ToolSpec]:
    """`tools` with each named string argument held to its values (an `enum`), or, with none left,
    left out when it is optional (a required one stays free); an argument gone (a pinned one) or of
    another type is left as it is."""
    offered: list[ToolSpec] = []
    for tool in tools:
        properties = tool.input_schema.get("properties")
        if not isinstance(properties, dict):
            offered.append(tool)
            continue
        named = {name: values for name, values in only.get(tool.name, {}).items()
                 if _free_string(properties.get(name))}  # fmt: skip
        held = {name: {**properties[name], "enum": list(values)} for name, values in named.items() if values}
        required = set(tool.input_schema.get("required", ()))
        gone = {name for name, values in named.items() if not values} - required
        if held:
            tool = replace(tool, input_schema={**tool.input_schema, "properties": {**properties, **held}})
        offered.append(without_arguments([tool], {tool.name: tuple(gone)})[0] if gone else tool)
    return offered


def _spent_calls(messages: Sequence[Message]) -> dict[str, list[dict[str, Any]]]:
    """The arguments of each call of the current user turn that has its result in the history."""
    turn = messages[user_turn(messages) :]
    answered = {m.tool_call_id for m in turn if m.role is Role.TOOL and m.tool_call_id}
    spent: dict[str, list[dict[str, Any]]] = {}
    for message in turn:
        for call in message.tool_calls:
            if call.id in answered and call.parse_error is None:
                spent.setdefault(call.name, []).append(call.arguments)
    return spent


def _excluding(schema: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`schema` that no longer admits `calls`; None when nothing but those calls was admitted.

    Exact for a tool without arguments and for one whose only free string argument (the key) the calls
    varied with the other arguments left at their defaults: the key may not take a spent value unless
    another argument is set as well (away from its default, for a boolean)."""
    properties = schema.get("properties")
    if not properties:  # the call without arguments was spent, or another (a pinned argument set)
        return None if any(not call for call in calls) else schema
    if not isinstance(properties, dict):
        return schema
    keys = [name for name, prop in properties.items() if _free_string(prop) or _string_enum(prop)]
    if len(keys) != 1:
        return schema
    (name,) = keys
    prop = properties[name]
    plain = [call for call in calls if _sets_only(call, name, properties)]
    used = [call.get(name, prop.get("default")) for call in plain]
    strings = [value for value in used if isinstance(value, str)]
    if len(strings) != len(used):
        return schema  # a call without the value and no default to stand for it
    # a value a plain pattern cannot spell (a quote, a brace) stays writable; the others are left out
    values = sorted({value for value in strings if _PLAIN_VALUE.fullmatch(value)})
    if not values or len(values) > _MAX_EXCLUDED:
        return schema
    required = list(schema.get("required", ()))
    if "enum" in prop:  # a grounded argument: its spent values leave the enum
        left = [value for value in prop["enum"] if value not in values]
        if not left:
            return _without_key(schema, name, values)
        pruned = {**prop, "enum": left}
    else:
        pruned = {**prop, "pattern": "^" + _none_of(values) + "$"}
    key_branch = {**schema, "properties": {**properties, name: pruned}}
    key_branch["required"] = [*required, name] if name not in required else required
    if len(properties) == 1:
        left_out = name not in required and prop.get("default") in values
        return {**key_branch, "required": [name] if left_out or name in required else []}
    others = [
        {
            **schema,
            "properties": {**properties, other: _away_from_default(properties[other])},
            "required": required if other in required else [*required, other],
        }
        for other in properties
        if other != name
    ]
    return {"anyOf": [key_branch, *others]}


def _free_string(prop: Any) -> bool:
    fixed = {"enum", "const", "pattern"}
    return isinstance(prop, dict) and prop.get("type") == "string" and not fixed & set(prop)


def _without_key(schema: dict[str, Any], name: str, spent: list[str]) -> dict[str, Any] | None:
    """`schema` once every value a grounded `name` may take is spent: the calls that set another
    argument away from its default, or leave `name` out (optional, its default unspent); None if none."""
    properties: dict[str, Any] = schema["properties"]
    required = list(schema.get("required", ()))
    branches = [
        {**schema, "properties": {**properties, other: _away_from_default(properties[other])},
         "required": required if other in required else [*required, other]}
        for other in properties
        if other != name and _away_from_default(properties[other]) is not properties[other]
    ]  # fmt: skip
    if name not in required and properties[name].get("default") not in spent:
        rest = {key: value for key, value in properties.items() if key != name}
        branches.insert(0, {**schema, "properties": rest, "additionalProperties": False})
    if not branches:
        return None
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _string_enum(prop: Any) -> bool:
    """A string argument held to an `enum` of strings (a grounded one)."""
    return isinstance(prop, dict) and prop.get("type") == "string" and isinstance(prop.get("enum"), list)


def _sets_only(call: dict[str, Any], name: str, properties: dict[str, Any]) -> bool:
    """Whether `call` sets no argument but `name` (any other it holds is at its declared default)."""
    return all(
        arg == name or (isinstance(prop := properties.get(arg), dict) and prop.get("default", ...) == value)
        for arg, value in call.items()
    )


def _away_from_default(prop: Any) -> Any:
    """An argument's schema as a call that differs by it must set it: a boolean with a default takes
    the other value; anything else is left as it is."""
    if isinstance(prop, dict) and prop.get("type") == "boolean" and isinstance(prop.get("default"), bool):
        return {**prop, "const": not prop["default"]}
    return prop


def _none_of(values: list[str]) -> str:
    """A regular expression (the subset llama.cpp's grammar compiler reads: plain groups, classes,
    `*`, `+`) matching every string except those in `values`, built from their trie."""
    trie: dict[str, Any] = {}
    for value in values:
        node = trie
        for char in value:
            node = node.setdefault(char, {})
        node[""] = {}
    return _branch(trie)


def _branch(node: dict[str, Any]) -> str:
    children = {char: child for char, child in node.items() if char}
    ends_here = "" in node
    if not children:
        return _ANY + "+"  # the value itself is excluded: only longer strings remain
    others = _ANY[:-1] + _class_chars(children) + "]" + _ANY + "*"
    options = [others, *(_literal(char) + _branch(child) for char, child in children.items())]
    if not ends_here:
        options.insert(0, "")  # a proper prefix of the values is another value
    return "(" + "|".join(options) + ")"


def holding(words: Sequence[str]) -> str:
    """A pattern for a string holding `words` in order, each a whole word (no letter, digit or `_`
    joined to either side: "sametrics.python" does not hold "metrics.py"), each within `_GAP`
    characters of the one before (or of the start): with unbounded gaps a small model wrote on past its
    token limit without them."""
    lead = "(" + _ANY + "{0," + str(_GAP - 1) + "}" + _APART + ")?"
    between = _APART + lead
    spelled = ("".join(_literal(char) for char in word) for word in words)
    return "^" + lead + between.join(spelled) + "(" + _APART + _ANY + "*)?$"


def _class_chars(chars: Iterable[str]) -> str:
    """Characters for a class, written with no escape: llama.cpp's compiler passes escapes on to its
    grammar, which refuses most of them (`\\.`, `\\-`) and then crashes the server. `_PLAIN_VALUE`
    holds no `]`, `\\` or `^`; a `-` goes last, where it is itself."""
    ordered = sorted(chars, key=lambda char: char == "-")
    return "".join(ordered)


def _literal(char: str) -> str:
    """One character as the pattern must say it: letters and digits bare, anything else alone in a
    class (`[.]`), for the same reason."""
    return char if char.isalnum() or char == "_" else "[" + char + "]"
