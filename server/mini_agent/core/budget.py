"""The context budget as pure policy: how many tokens a request holds, how a long observation is cut
for the model, and how older turns are compacted so a request never passes the model's window.

No I/O: `context.py` applies these rules with the facts only the model server has (its window, its
token counts for the last request) and the one model call a summary needs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from mini_agent.core.contracts import Compaction, Message, Observation, Role, TokenUsage, ToolSpec
from mini_agent.core.session import AgentSession, StepRecord

DEFAULT_WINDOW = 8192  # tokens, when neither the options nor the server say
MESSAGE_OVERHEAD = 12  # role markers and separators a chat template adds around one message
# The ReAct instructions a text-mode request adds to the system prompt (a test holds it above their estimate).
PROTOCOL_ALLOWANCE = 440
READER = "read_observation"

_WORDS = re.compile(r"[A-Za-z0-9]+")
_SPACES = re.compile(r"\s+")
_LINE = re.compile(r"\S[^\n]*")


def estimate(text: str) -> int:
    """Tokens of `text`, never fewer than a BPE tokenizer makes of ordinary text and code.

    By character class: a run of ASCII letters costs one token per three letters (rounded up), a run
    that holds digits one per character (numbers and hashes split finely), each punctuation mark and
    whitespace run one, each other character its UTF-8 length (the most a byte-level tokenizer makes
    of it). Real vocabularies merge more, so this overcounts by half or more; it is only applied to
    the part of a request the server has not counted yet.
    """
    if not text:
        return 0
    words = _WORDS.findall(text)
    spaces = _SPACES.findall(text)
    rest = len(text) - sum(map(len, words)) - sum(map(len, spaces))
    if not text.isascii():
        rest += len(text.encode("utf-8", "surrogatepass")) - len(text)
    cost = sum((len(w) + 2) // 3 if w.isalpha() else len(w) for w in words)
    return cost + len(spaces) + rest


def message_cost(message: Message) -> int:
    calls = "".join(
        call.name + (call.raw_arguments or json.dumps(call.arguments)) for call in message.tool_calls
    )
    return estimate(message.content) + estimate(calls) + MESSAGE_OVERHEAD * (1 + len(message.tool_calls))


def tools_cost(tools: Sequence[ToolSpec]) -> int:
    if not tools:
        return 0
    schemas = json.dumps([tool.to_openai() for tool in tools], ensure_ascii=False)
    return estimate(schemas) + PROTOCOL_ALLOWANCE + MESSAGE_OVERHEAD * len(tools)


@dataclass(frozen=True, slots=True)
class Window:
    """A model's window split into the prompt's part and the reply's (the request's `max_tokens`)."""

    size: int
    reply: int

    @classmethod
    def of(cls, size: int, max_tokens: int) -> Window:
        return cls(size, max(1, min(max_tokens, size // 4)))

    @property
    def prompt(self) -> int:
        return self.size - self.reply

    @property
    def observation(self) -> int:
        """The most one observation may take of the prompt, marker included."""
        return self.prompt // 5

    @property
    def recent(self) -> int:
        """How much of the newest turns a compaction keeps byte-exact."""
        return self.prompt // 6

    @property
    def compacted(self) -> int:
        """What a compacted request may hold at most, so that compactions stay rare."""
        return self.prompt // 2


def view(session: AgentSession) -> list[Message]:
    """The history as the model is shown it: the latest compaction applied."""
    compaction = latest_compaction(session.steps)
    if compaction is None:
        return list(session.messages)
    return [*session.messages[:2], *compaction.replacement, *session.messages[compaction.upto :]]


def latest_compaction(steps: Sequence[StepRecord]) -> Compaction | None:
    return next((step.compaction for step in reversed(steps) if step.compaction is not None), None)


def offers_reader(session: AgentSession) -> bool:
    """`read_observation` is offered while the model's view holds a cut or digested observation."""
    if latest_compaction(session.steps) is not None:
        return True
    return any(obs.shown is not None for step in session.steps for obs in step.observations)


def measure(
    history: Sequence[Message], tools: Sequence[ToolSpec], session: AgentSession, reader: bool
) -> int:
    """Tokens of a request: the server's own count of the last request and its reply, plus an estimate
    of what came after; the whole estimate when there is no such count or the view changed since."""
    last = session.steps[-1] if session.steps else None
    use = last.context if last is not None else None
    if last is None or use is None or not last.usage.prompt_tokens or use.reader != reader:
        return tools_cost(tools) + sum(message_cost(m) for m in history)
    known = last.usage.prompt_tokens + last.usage.completion_tokens + MESSAGE_OVERHEAD
    return known + sum(message_cost(m) for m in history[use.messages + 1 :])


def spent_on_context(record: StepRecord) -> TokenUsage:
    """Tokens of the summary request the step's compaction made (they count in the session's total)."""
    return record.compaction.usage if record.compaction is not None else TokenUsage()


def window_use(record: StepRecord) -> tuple[int, int]:
    """(used, size) of the window after a model turn: the server's count, else the estimate sent."""
    if record.context is None:
        return 0, 0
    counted = record.usage.prompt_tokens + record.usage.completion_tokens
    return (counted if record.usage.prompt_tokens else record.context.tokens), record.context.size


# -- long observations ----------------------------------------------------------------------------

CUT_MARKER = (
    "\n[cut to fit the model's context window: shown characters 0-{shown} of {total}, {left} left out. "
    'Read more with the {reader} tool: {{"call_id": "{call_id}", "offset": {shown}, "length": {page}}}]'
)


def fit(observation: Observation, window: Window) -> Observation:
    """`observation` with `shown` set when its output would take more than its share of the window."""
    text = observation.output
    if observation.tool_name == READER or estimate(text) + MESSAGE_OVERHEAD <= window.observation:
        return observation
    return replace(observation, shown=cut(text, len(text), observation.call_id, window))


def cut(head: str, total: int, call_id: str, window: Window) -> str:
    """The start of a result (`head`, of a `total`-character whole) within its share, and the marker."""
    kept = head_within(head, window.observation - MESSAGE_OVERHEAD - estimate(CUT_MARKER) - 24)
    return kept + CUT_MARKER.format(
        shown=len(kept),
        total=total,
        left=total - len(kept),
        reader=READER,
        call_id=call_id,
        page=page_chars(window),
    )


def recut(message: Message, total: int, window: Window) -> Message:
    """A kept observation cut again for a smaller window than it was first cut for."""
    if message.role is not Role.TOOL or message_cost(message) <= window.observation:
        return message
    head = message.content.split(CUT_MARKER[:20])[0]
    text = cut(head, total, message.tool_call_id or "", window)
    return Message(Role.TOOL, text, tool_call_id=message.tool_call_id, name=message.name)


def head_within(text: str, tokens: int) -> str:
    """The longest start of `text` whose estimate is at most `tokens` (by bisection on characters)."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate(text[:mid]) <= tokens:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def page_chars(window: Window) -> int:
    """Characters a `read_observation` page asks for by default: its share at two characters a token."""
    return max(256, (window.observation - 64) * 2)


def read_page(full: Observation, offset: int, length: int, call_id: str, window: Window) -> Observation:
    """One page of a stored observation, itself within an observation's share of the window."""
    text = full.output
    offset = max(0, min(offset, len(text)))
    chunk = head_within(text[offset : offset + max(1, length)], window.observation - MESSAGE_OVERHEAD - 100)
    end = offset + len(chunk)
    more = (
        f'; more with {{"call_id": "{full.call_id}", "offset": {end}, "length": {page_chars(window)}}}'
        if end < len(text)
        else "; that is the end"
    )
    header = f"[{full.tool_name} result {full.call_id}: characters {offset}-{end} of {len(text)}{more}]\n"
    return Observation(call_id, READER, header + chunk)


def reader_spec() -> ToolSpec:
    return ToolSpec(
        name=READER,
        description=(
            "Read part of a tool result that was cut or compacted to fit your context window: the "
            "characters from `offset`, at most `length` of them."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "call_id": {"type": "string", "description": "the id of the tool call whose result to read"},
                "offset": {"type": "integer", "minimum": 0},
                "length": {"type": "integer", "minimum": 1},
            },
            "required": ["call_id"],
        },
        idempotent=True,
    )


# -- compaction -----------------------------------------------------------------------------------

DIGEST = '[compacted: {name} result {call_id}, {total} characters, began "{first}"; {reader} reads it]'
SUMMARY_INTRO = "Summary of the earlier turns of this session (compacted to fit the context window):\n"
SUMMARY_PROMPT = (
    "Summarise the transcript below for the assistant that wrote it, who will continue the task without "
    "it: the facts found, the tool results that matter (with call ids), what was tried and what is left. "
    "Be brief and exact; no preamble."
)


def digest(message: Message, total: int) -> Message:
    """An older observation as one line; `total` is the length of its full stored text."""
    if message.role is not Role.TOOL or message.content.startswith("[compacted:"):
        return message
    first = next(iter(_LINE.findall(message.content)), "")[:60].replace('"', "'")
    text = DIGEST.format(
        name=message.name or "tool",
        call_id=message.tool_call_id or "",
        total=total,
        first=first,
        reader=READER,
    )
    return Message(Role.TOOL, text, tool_call_id=message.tool_call_id, name=message.name)


@dataclass(frozen=True, slots=True)
class Plan:
    """A compaction worked out from the view: where the kept turns start (`split` in the view, `upto`
    in the stored history), the older part with its observations digested, the newest turn cut again
    for the window when it had to be (`refit`, then nothing is kept byte-exact), and whether that is
    small enough without a summary."""

    split: int
    upto: int
    older: tuple[Message, ...]
    refit: tuple[Message, ...]
    digested: int
    enough: bool


def plan(
    session: AgentSession, history: Sequence[Message], fixed: int, window: Window, *, refit: bool = False
) -> Plan | None:
    """Keep the newest turns (at least the last) within `window.recent`; with `refit` (the server
    refused the request) keep only the last, its observations cut again for `window`. None when that
    changes nothing. `fixed` is what the request costs besides its messages (tools, protocol)."""
    earlier = latest_compaction(session.steps)
    start = earlier.upto if earlier is not None else 2
    lead = len(history) - (len(session.messages) - start)  # the view index of messages[start]
    turns = [i for i in range(lead, len(history)) if history[i].role is Role.ASSISTANT]
    if not turns:
        return None
    split = turns[-1]
    for index in reversed(turns if not refit else ()):
        if sum(message_cost(m) for m in history[index:]) > window.recent:
            break
        split = index
    lengths = full_lengths(session)
    older = tuple(digest(m, lengths.get(m.tool_call_id or "", len(m.content))) for m in history[2:split])
    last = tuple(recut(m, lengths.get(m.tool_call_id or "", len(m.content)), window) for m in history[split:])
    changed = [a is not b for a, b in zip(history[2:], older + last, strict=True)]
    if not any(changed) and split <= 2:
        return None
    if not refit and sum(message_cost(m) for m in history[2:split]) < window.recent:
        return None  # too little to gain: a summary would cost more than it frees
    kept = [*history[:2], *older, *last]
    enough = fixed + sum(message_cost(m) for m in kept) <= window.compacted
    upto = len(session.messages) if refit else start + split - lead
    return Plan(split, upto, older, last if refit else (), sum(changed[: len(older)]), enough)


def full_lengths(session: AgentSession) -> dict[str, int]:
    """Each stored result's length, by the daemon's call id and by the model's own (the history's)."""
    return {
        key: len(obs.output)
        for step in session.steps
        for obs in step.observations
        for key in (obs.call_id, step.model_ids.get(obs.call_id, obs.call_id))
    }


def find_observation(session: AgentSession, call_id: str) -> Observation | None:
    """A stored tool result by the daemon's call id or by the model's own id for it."""
    for step in session.steps:
        for obs in step.observations:
            if call_id in (obs.call_id, step.model_ids.get(obs.call_id)):
                return obs
    return None


def transcript(older: Sequence[Message], tokens: int) -> str:
    """The older turns as text for the summary request, cut to `tokens` (its start and its end kept)."""
    text = "\n\n".join(f"{m.role.value}: {m.content}" for m in older)
    if estimate(text) <= tokens:
        return text
    head = head_within(text, tokens // 2)
    tail = head_within(text[::-1], tokens // 2)[::-1]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters left out ...]\n{tail}"


def compact(
    plan: Plan,
    summary: str | None,
    history: Sequence[Message],
    fixed: int,
    before: int,
    usage: TokenUsage,
) -> tuple[Compaction, list[Message]]:
    """The compaction and the view it gives; `summary` replaces the older turns when the model wrote one."""
    older = plan.older if summary is None else (Message(Role.USER, SUMMARY_INTRO + summary.strip()),)
    replacement = (*older, *plan.refit)
    after_view = [*history[:2], *replacement, *history[plan.split + len(plan.refit) :]]
    after = fixed + sum(message_cost(m) for m in after_view)
    done = Compaction(
        upto=plan.upto,
        replacement=replacement,
        digested=plan.digested,
        summarised=0 if summary is None else len(plan.older),
        before=before,
        after=after,
        usage=usage,
    )
    return done, after_view


def describe(done: Compaction, window: Window) -> str:
    how = (
        f"{done.summarised} older messages summarised by the model"
        if done.summarised
        else f"{done.digested} older observations shrunk to a one-line digest"
    )
    return (
        f"Context compacted to fit the model's {window.size}-token window: {how}; the request went from "
        f"about {done.before} to about {done.after} tokens. The stored session keeps everything."
    )


def too_long(window: Window, tokens: int) -> str:
    return (
        f"The request does not fit the model's context window: about {tokens} tokens of prompt plus "
        f"{window.reply} for the reply, in a {window.size}-token window, even after compaction. Set a "
        "larger window (llm.contextWindow, and the server's own, e.g. vLLM --max-model-len or llama.cpp "
        "--ctx-size), then agent/resumeSession with the new llm settings and step again."
    )
