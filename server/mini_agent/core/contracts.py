"""The values that pass between the runtime, the model adapters, the tools and the store.

Plain dataclasses and enums with no I/O and no wire format: `wire.py` maps them to the camelCase
JSON the protocol carries. Every layer may import this module; it imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le

# Each default the daemon's options and its parts share, written once.
TOOL_TIMEOUT_SEC = 30.0  # a tool call, and loading a tool file
MAX_OUTPUT_BYTES = 65536  # a tool's output beyond this is cut and flagged `truncated`
MAX_STEPS = 20  # model turns per session

ToolMode = Literal["react", "native", "json", "auto"]
TOOL_MODES: tuple[ToolMode, ...] = ("react", "native", "json", "auto")


@dataclass(frozen=True, slots=True)
class ReplyFormat:
    """What the runtime needs to know of the tool mode a reply came in, so that it never compares
    mode names: how a model in it finishes (for a note to the model), and whether the text it streams
    is the thought alone (its action is not prose) rather than the whole completion."""

    finish: str
    streams_thought_only: bool = False


ReplyFormats = Callable[[str], ReplyFormat]
"""The reply format of a step's recorded tool mode: knowledge of the model adapter's
(`llm.formats.reply_format`), handed to the runtime, which never reads a mode's name itself."""

PLAIN_REPLY = ReplyFormat("give your Final Answer")


def plain_replies(tool_mode: str) -> ReplyFormat:
    """The formats a runtime assumes when it is given none: every reply is prose."""
    return PLAIN_REPLY


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class SessionStatus(StrEnum):
    READY = "ready"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    FINISHED = "finished"


class StopReason(StrEnum):
    """Why a step ended the turn (the Agent Client Protocol's names where they fit)."""

    END_TURN = "end_turn"
    MAX_TURN_REQUESTS = "max_turn_requests"
    CANCELLED = "cancelled"
    LOOP_DETECTED = "loop_detected"
    MAX_TOKENS = "max_tokens"  # the request did not fit the model's context window, even compacted
    REFUSAL = "refusal"  # the model server says the model refused (`refusal`, finish_reason content_filter)
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for.

    `raw_arguments` is the argument text exactly as the model wrote it; `parse_error` says why it
    could not be decoded into `arguments`, so the registry can show the model its own text.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    parse_error: str | None = None


@dataclass(frozen=True, slots=True)
class Expansion:
    """What a call the tool sandbox refused would need to succeed, and what a person may grant that
    one call (`core.expansion`): the network, or writes beneath one more folder."""

    network: bool = False
    write: str | None = None

    def words(self) -> str:
        """The expansion as a permission option names it."""
        return "network access" if self.network else f"write access to {self.write}"


@dataclass(frozen=True, slots=True)
class Observation:
    call_id: str
    tool_name: str
    output: str
    is_error: bool = False
    execution_time_ms: float = 0.0
    truncated: bool = False
    logs: str = ""  # what the tool printed to stdout/stderr while it ran
    shown: str | None = None  # what the model was shown when `output` was cut to fit its window
    structured: dict[str, Any] | None = None  # the result as the tool's `output_schema` describes it
    expansion: Expansion | None = None  # the sandbox refused the call; this would have let it run
    images: tuple[Image, ...] = ()  # images the tool returned, for the model where its mode can take them


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens a model server counted. `reported` tells a real 0 from a server that sent no usage at all
    (llama-cpp-python when streaming): a nonzero count implies it, a sum is reported if any part was."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reported: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.prompt_tokens or self.completion_tokens or self.cached_tokens:
            object.__setattr__(self, "reported", True)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reported or other.reported,
        )


@dataclass(frozen=True, slots=True)
class Image:
    """An image a person attached to their words (a screenshot, a diagram): its media type and its
    bytes as base64, as OpenAI's `image_url` data URLs and ACP's image blocks carry them."""

    mime_type: str
    data: str


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource a person put in their prompt: a link to it (`uri`, `name`), or the resource itself
    with its `text` embedded (an editor's open file, a selection)."""

    uri: str
    name: str = ""
    text: str | None = None
    mime_type: str | None = None


# One part of what a person said in a turn, in the order they gave it: words, an image, a resource.
Part = str | Image | Resource


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of a session's history.

    An assistant message holds the model's completion exactly as it arrived, so that rendering the
    history again yields the same bytes (the model server's prefix cache depends on it).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    # a user turn's attachments or the images a tool returned, sent as image parts where the mode can
    images: tuple[Image, ...] = ()
    # a user turn as the person gave it, when that was more than words then images (`core.content`);
    # `content` and `images` are what the model is given of it
    parts: tuple[Part, ...] = ()


def user_turn(messages: Sequence[Message]) -> int:
    """Index of the user's last message in `messages`: where the turn under way begins (0 without one)."""
    return max((n for n, m in enumerate(messages) if m.role is Role.USER), default=0)


@dataclass(frozen=True, slots=True)
class Compaction:
    """Older turns replaced in the model's view of a session: the messages from index 2 (after the
    system prompt and the task) up to `upto` are sent as `replacement`; the stored history keeps them."""

    upto: int
    replacement: tuple[Message, ...]
    digested: int = 0  # observations shrunk to a one-line digest
    summarised: int = 0  # messages the model summarised (0: the digests were enough)
    before: int = 0  # the request's estimated tokens before and after
    after: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)  # of the summary request, when there was one


@dataclass(frozen=True, slots=True)
class ContextUse:
    """What one model request held of the window: its messages in the model's view, whether the
    `read_observation` tool was offered, and the window it was fitted to."""

    messages: int
    reader: bool
    size: int
    tokens: int = 0  # the request's size as estimated before it was sent


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """What one model call produced, in mode-independent terms.

    `content` is the completion text exactly as received (what goes back into the history);
    `thought` the reasoning part; `final_answer` is set when the model answered; `format_error` is set
    when a text reply started the ReAct protocol and broke it; `refusal` is set (and is the final
    answer) when the server says the model refused.
    """

    content: str
    thought: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    final_answer: str | None = None
    format_error: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str | None = None
    tool_mode: ToolMode = "react"
    refusal: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSource:
    path: str
    function: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """How one tool is offered and run, declared once: the `@tool` decorator, agent/registerTool's
    params, the registry and the tool host all carry this type, so its rule below is the only check."""

    name: str | None = None
    description: str | None = None
    requires_approval: bool = False
    idempotent: bool = False
    timeout_sec: float | None = None  # None: the daemon's `tools.timeoutSec`
    # MCP's behaviour hints (None: not said): it only reads / may destroy / reaches outside the workspace
    read_only: bool | None = None
    destructive: bool | None = None
    open_world: bool | None = None

    def __post_init__(self) -> None:
        if self.timeout_sec is not None and self.timeout_sec <= 0:
            raise ValueError(f"a tool's timeout must be positive, got {self.timeout_sec:g}")

    @property
    def hints(self) -> tuple[tuple[str, bool], ...]:
        """The hints declared, by their MCP names (`ToolSpec.hints`); idempotence is its own field."""
        named = {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "openWorldHint": self.open_world,
        }
        return tuple(sorted((name, value) for name, value in named.items() if value is not None))

    @property
    def asks(self) -> bool:
        """Whether a call waits for approval: as asked, unless the tool only reads (and does not
        destroy), as for an MCP server's read-only tool."""
        return self.requires_approval and not (self.read_only is True and self.destructive is not True)

    def over(self, declared: ToolOptions) -> ToolOptions:
        """These options (a registration's) on top of `declared` (the decorator's): a value set here
        wins, and either side alone can ask for approval or mark the tool idempotent."""
        return ToolOptions(
            self.name or declared.name,
            self.description or declared.description,
            self.requires_approval or declared.requires_approval,
            self.idempotent or declared.idempotent,
            declared.timeout_sec if self.timeout_sec is None else self.timeout_sec,
            declared.read_only if self.read_only is None else self.read_only,
            declared.destructive if self.destructive is None else self.destructive,
            declared.open_world if self.open_world is None else self.open_world,
        )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model and the client see it (MCP's `Tool` shape)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    source: ToolSource | None = None
    title: str | None = None
    requires_approval: bool = False
    idempotent: bool = False
    client: bool = False
    timeout_sec: float | None = None
    mcp_server: str | None = None  # the MCP server it comes from
    # the MCP annotations (readOnlyHint, ...) its server set, as (name, value): absent ones stay unknown
    hints: tuple[tuple[str, bool], ...] = ()
    output_schema: dict[str, Any] | None = None  # what a result's structured value looks like
    # `input_schema` as declared, its named types once in `$defs` (the model is shown them inlined)
    declared_schema: dict[str, Any] | None = None

    def to_openai(self) -> dict[str, Any]:
        """The `tools` entry of a chat-completions request."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


@dataclass(frozen=True, slots=True)
class Harness:
    """What the loop does around the model to help a small one finish; each switch on by default and
    measured on and off by `bench/agents` (`llm.harness` on the wire, e.g. `{"finalCheck": false}`).

    `text_calls`: in native and auto modes, a reply whose text is a tool call (a JSON object naming a
    listed tool, fenced or not, `<tool_call>` tags, a list of them) is run as that call; auto then
    settles on react for a server that ignored `tools`.
    `prune_repeats`: in json mode the next turn's schema cannot express a call whose result the model
    already has in this turn (a tool without arguments called already).
    `final_check`: a final answer that leaves out a result this turn gathered gets one more turn, with
    the task shown again, before it is taken.
    `repair_hints`: a call that failed while it set an optional argument away from its declared default
    is shown, beside the error, that the argument is optional and what leaving it out means (`repair`).
    `last_step`: before the step budget's last model turn the model is told it is the last and must
    answer; json mode's grammar then offers only the final answer, native sends `tool_choice: "none"`
    (`windup`).
    `known_results`: a call identical to one whose result the model already has in this turn, with no
    call since that may change it, is not run again: the model is shown that result and told to use it
    (`loops.known_result`).
    `grounded_values`: in json mode, a string argument that failed with a value its tool said does not
    exist, and that nothing in the turn holds, may from then on take only a value the turn has seen (the
    task's words, results, successful calls' arguments; `repair.grounded`).
    `hide_repeats`: a step whose every call is answered from an earlier result (`known_results`) is
    sent back to the model as an empty turn, its note naming the call: a small model shown its own
    repeat writes it once more.
    `change_check`: a final answer that says something was changed, or names a tool that changes things
    instead of calling it, in a turn where no such tool ran, gets one more turn, the model told so
    (`changecheck`).
    """

    text_calls: bool = True
    prune_repeats: bool = True
    final_check: bool = True
    repair_hints: bool = True
    last_step: bool = True
    known_results: bool = True
    grounded_values: bool = True
    hide_repeats: bool = True
    change_check: bool = True


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """The model settings, declared once: the daemon's and a session's `llm` options are this with
    every field optional (`params.LLMParams`), and the bounds below are what those options accept."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "default"
    api_key: str | None = None
    tool_mode: ToolMode = "react"
    temperature: Annotated[float, Ge(0), Le(2)] = 0.0
    max_tokens: Annotated[int, Ge(1)] = 1024
    stream: bool = True
    max_retries: Annotated[int, Ge(0), Le(10)] = 3
    timeout_sec: Annotated[float, Gt(0)] = 120.0  # the longest silence while connecting or reading
    request_timeout_sec: Annotated[float, Gt(0)] = 600.0  # the whole request, retries included
    # bytes read off one reply before it is refused
    max_reply_bytes: Annotated[int, Ge(1024)] = 8 * 1024 * 1024
    # tokens the model server holds (prompt and reply); None: ask the server, else `budget.DEFAULT_WINDOW`
    context_window: Annotated[int, Ge(512)] | None = None
    seed: int | None = None  # sent as the request's `seed`, for servers that sample reproducibly
    harness: Harness = field(default_factory=Harness)


class LLMError(Exception):
    """The model server could not produce a completion (after any retries)."""

    def __init__(
        self,
        message: str,
        *,
        url: str = "",
        status: int | None = None,
        context_overflow: bool = False,
        context_window: int | None = None,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.context_overflow = context_overflow  # the server refused the prompt as longer than its window
        self.context_window = context_window  # that window, when its message said it


TextSink = Callable[[str], None]
NoticeSink = Callable[[str], None]  # one line for a person, e.g. "retrying the model server in 2 s"
