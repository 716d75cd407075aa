"""The tool registry: what tools exist, where they come from, and routing calls to them.

It implements the runtime's ToolExecutor port and knows nothing of JSON-RPC. Workspace tools are
reflected, validated and run in tool-host subprocesses (`host.ToolHost`); this process only checks
paths and routes. Client tools (executed by the editor) are validated here with jsonschema and
handed to a caller the server wires up. `execute` turns every failure into an error observation.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mini_agent.core.contracts import (
    MAX_OUTPUT_BYTES,
    TOOL_TIMEOUT_SEC,
    Observation,
    ToolCall,
    ToolOptions,
    ToolSpec,
)
from mini_agent.core.errors import AgentError
from mini_agent.tools.host import LoadError, ToolHost
from mini_agent.tools.protocol import CallResult, DescribedTool, cap_text
from mini_agent.tools.validation import invalid_arguments

if TYPE_CHECKING:  # imported by the first client tool: see validation.py
    from jsonschema import Draft202012Validator

ClientToolCaller = Callable[[str, ToolCall], Awaitable[Any]]


class ExternalTools(Protocol):
    """Tools that live elsewhere (MCP servers): listed next to ours, called through `execute`."""

    def list_tools(self) -> list[ToolSpec]: ...

    def get(self, name: str) -> ToolSpec | None: ...

    async def call(self, call: ToolCall, session_id: str, timeout: float) -> CallResult: ...


_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_Key = tuple[str, str | None]  # (relative path, function or None for the whole file)
_HINTS = ("read_only", "destructive", "open_world")  # left out of a record while not said
_NO_OPTIONS = ToolOptions()  # a registration that sets none: the decorator's (or the defaults) apply


class RegistrationError(AgentError):
    """A registration was refused; the message is shown to the client as is."""

    reason = "registration_refused"


@dataclass(frozen=True, slots=True)
class _FileRegistration:
    path: str  # relative to the workspace root, POSIX separators
    function: str | None = None
    options: ToolOptions = dataclasses.field(default_factory=ToolOptions)

    @property
    def key(self) -> _Key:
        return (self.path, self.function)

    def record(self) -> dict[str, Any]:
        """This registration as a flat JSON record (see `of_record`)."""
        options = {
            k: v for k, v in dataclasses.asdict(self.options).items() if v is not None or k not in _HINTS
        }
        return {"path": self.path, "function": self.function, **options}

    @classmethod
    def of_record(cls, record: dict[str, Any]) -> _FileRegistration:
        """Read back a `record()`; a bad option is refused with the options type's own rule."""
        fields = dict(record)
        path, function = fields.pop("path", None), fields.pop("function", None)
        if not isinstance(path, str):
            raise RegistrationError(f"a registration record without a path: {record}")
        try:
            return cls(path, function, ToolOptions(**fields))
        except ValueError as exc:
            raise RegistrationError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class _Entry:
    spec: ToolSpec
    owner: _Key | None = None  # the file registration it came from; None for client tools
    file: Path | None = None  # its absolute path, for file tools
    validator: Draft202012Validator | None = None  # client tools only


class ToolRegistry:
    """Registered tools of one workspace; see the module docstring."""

    def __init__(
        self,
        workspace_root: Path,
        *,
        timeout_sec: float = TOOL_TIMEOUT_SEC,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        client_caller: ClientToolCaller | None = None,
        max_hosts: int = 4,
        max_memory_mb: int = 1024,
        inherit_secrets: bool = False,
        secret_values: Collection[str] = (),
        confine: bool = True,
    ) -> None:
        self._root = Path(workspace_root).resolve()
        self._timeout_sec = timeout_sec
        self._max_output = max_output_bytes
        self._client_caller = client_caller
        self._host = ToolHost(
            self._root,
            max_output_bytes=max_output_bytes,
            max_hosts=max_hosts,
            max_memory_mb=max_memory_mb,
            inherit_secrets=inherit_secrets,
            secret_values=secret_values,
            confine=confine,
        )
        self._tools: dict[str, _Entry] = {}
        self._files: dict[_Key, _FileRegistration] = {}
        self._lock = asyncio.Lock()
        self._sources: list[ExternalTools] = []
        # Said with every unknown-tool observation while the workspace holds configured tools back
        # (an untrusted folder): which, why, and how to trust it. "" when nothing is held back.
        self.held_back = ""

    async def register_file(
        self,
        path: str,
        *,
        function: str | None = None,
        options: ToolOptions = _NO_OPTIONS,
    ) -> list[ToolSpec]:
        """Register one function or all public functions of a workspace file (replacing earlier ones)."""
        if options.name is not None:
            _check_name(options.name)
        relative, _ = self._locate(path)
        registration = _FileRegistration(relative, function, options)
        async with self._lock:
            specs = await self._reflect(registration)
            with self._transaction():
                self._apply(registration, specs)
        return specs

    def register_client_tool(
        self, name: str, description: str, input_schema: dict[str, Any], *, requires_approval: bool = False
    ) -> ToolSpec:
        """Register a tool the client executes; its schema is checked against Draft 2020-12."""
        _check_name(name)
        validator = _client_validator(name, input_schema)
        existing = self._tools.get(name)
        if existing is not None and not existing.spec.client:
            raise RegistrationError(
                f"a tool named '{name}' is already registered from {_origin(existing.spec)}"
            )
        spec = ToolSpec(name, description, input_schema, requires_approval=requires_approval, client=True)
        self._tools[name] = _Entry(spec, validator=validator)
        return spec

    def unregister(self, name: str) -> ToolSpec:
        entry = self._tools.get(name)
        if entry is None:
            raise RegistrationError(f"no tool named '{name}' is registered (registered: {self._names()})")
        if entry.owner is not None and entry.owner[1] is None:
            self._split(entry.owner)
        del self._tools[name]
        self._prune()
        return entry.spec

    async def reload(self, path: str) -> list[ToolSpec] | None:
        """Re-reflect every registration of `path` (after a save); None if it is not registered."""
        relative = self._relative_or_none(path)
        async with self._lock:
            registrations = [r for r in self._files.values() if r.path == relative]
            if not registrations:
                return None
            results = [(r, await self._reflect(r)) for r in registrations]
            with self._transaction():
                for registration, specs in results:
                    self._apply(registration, specs)
        return [spec for _, specs in results for spec in specs]

    def attach(self, source: ExternalTools) -> None:
        """Offer `source`'s tools after ours; a name of ours wins over one of the source's."""
        self._sources.append(source)

    def own_names(self) -> list[str]:
        """The names of the workspace and client tools (other sources must not take them)."""
        return list(self._tools)

    def list_tools(self) -> list[ToolSpec]:
        own = [entry.spec for entry in self._tools.values()]
        return own + [
            spec for source in self._sources for spec in source.list_tools() if spec.name not in self._tools
        ]

    def get(self, name: str) -> ToolSpec | None:
        entry = self._tools.get(name)
        if entry is not None:
            return entry.spec
        return next((spec for source in self._sources if (spec := source.get(name)) is not None), None)

    def registrations(self) -> list[dict[str, Any]]:
        """Everything needed to register the same tools again after a restart (see `restore`)."""
        files = [r.record() for r in self._files.values()]
        clients = [
            {
                "client": True,
                "name": e.spec.name,
                "description": e.spec.description,
                "input_schema": e.spec.input_schema,
                "requires_approval": e.spec.requires_approval,
            }
            for e in self._tools.values()
            if e.spec.client
        ]
        return files + clients

    async def restore(self, records: Iterable[dict[str, Any]]) -> list[str]:
        """Replay `registrations()`; returns the error of each record that no longer registers."""
        errors: list[str] = []
        for record in records:
            try:
                if record.get("client"):
                    self.register_client_tool(**{k: v for k, v in record.items() if k != "client"})
                else:
                    registration = _FileRegistration.of_record(record)
                    await self.register_file(
                        registration.path, function=registration.function, options=registration.options
                    )
            except (RegistrationError, TypeError) as exc:
                errors.append(str(exc))
        return errors

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation:
        """Run one call; never raises except CancelledError (which kills a running workspace tool)."""
        started = time.perf_counter()
        try:
            result = await self._execute(call, session_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a fault of ours still becomes an observation
            result = CallResult(f"{call.name} could not run: {type(exc).__name__}: {exc}", True)
        return Observation(
            call_id=call.id,
            tool_name=call.name,
            output=result.output,
            is_error=result.is_error,
            execution_time_ms=(time.perf_counter() - started) * 1000.0,
            truncated=result.truncated,
            logs=result.logs,
            images=result.images,
            structured=result.structured,
            expansion=result.expansion,
        )

    async def aclose(self) -> None:
        await self._host.aclose()

    async def _execute(self, call: ToolCall, session_id: str) -> CallResult:
        entry = self._tools.get(call.name)
        source = None if entry is not None else self._source_of(call.name)
        if entry is None and source is None:
            unknown = f"unknown tool '{call.name}'. Available tools: {self._names()}"
            return CallResult(f"{unknown}. {self.held_back}" if self.held_back else unknown, True)
        if call.parse_error is not None:
            return CallResult(
                f"could not parse the arguments of {call.name} as JSON: {call.parse_error}\n"
                f"Raw arguments: {call.raw_arguments}",
                True,
            )
        if source is not None:
            return await source.call(call, session_id, self._timeout_sec)
        assert entry is not None
        timeout = entry.spec.timeout_sec or self._timeout_sec
        if entry.spec.client:
            return await self._call_client(entry, call, session_id, timeout)
        origin = entry.spec.source
        assert origin is not None and entry.file is not None  # every file tool has both
        return await self._host.call(
            entry.file,
            origin.function,
            tool_name=call.name,
            arguments=call.arguments,
            timeout=timeout,
            hints=dict(entry.spec.hints),
        )

    async def _call_client(
        self, entry: _Entry, call: ToolCall, session_id: str, timeout: float
    ) -> CallResult:
        assert entry.validator is not None
        problem = invalid_arguments(call.name, entry.validator, call.arguments, entry.spec.input_schema)
        if problem is not None:
            return CallResult(problem, True)
        if self._client_caller is None:
            return CallResult(f"{call.name} runs in the client, and no client is connected", True)
        try:
            result = await asyncio.wait_for(self._client_caller(session_id, call), timeout)
        except TimeoutError:
            return CallResult(f"{call.name} timed out after {timeout:g} s", True)
        except Exception as exc:
            return CallResult(f"{call.name} failed in the client: {exc}", True)
        try:
            text = (
                result
                if isinstance(result, str)
                else json.dumps(result, ensure_ascii=False, separators=(",", ":"))
            )
        except (TypeError, ValueError):
            return CallResult(
                f"{call.name} returned a {type(result).__name__} value, which has no JSON form", True
            )
        output, truncated = cap_text(text, self._max_output)
        return CallResult(output, False, truncated)

    async def _reflect(self, registration: _FileRegistration) -> list[ToolSpec]:
        _, absolute = self._locate(registration.path)
        try:
            described = await self._host.load(
                absolute,
                function=registration.function,
                options=registration.options,
                timeout=self._timeout_sec,
            )
        except LoadError as exc:
            raise RegistrationError(f"cannot register {registration.path}: {exc}") from exc
        specs = [_spec(registration, d) for d in described]
        for spec in specs:
            _check_name(spec.name, hint=f"{registration.path}:{spec.source.function if spec.source else ''}")
        return specs

    def _apply(self, registration: _FileRegistration, specs: list[ToolSpec]) -> None:
        """Install `specs`, first removing what they replace; refuse names owned elsewhere."""
        replaced = {registration.key}
        if registration.function is None:
            replaced |= {key for key in self._files if key[0] == registration.path}
        sources = {(s.source.path, s.source.function) for s in specs if s.source}
        doomed = {
            name
            for name, entry in self._tools.items()
            if entry.owner in replaced
            or (entry.spec.source and (entry.spec.source.path, entry.spec.source.function) in sources)
        }
        names = [s.name for s in specs]
        for spec in specs:
            if names.count(spec.name) > 1:
                raise RegistrationError(f"{registration.path} defines the tool name '{spec.name}' twice")
            clash = self._tools.get(spec.name)
            if clash is not None and spec.name not in doomed:
                raise RegistrationError(
                    f"a tool named '{spec.name}' is already registered from {_origin(clash.spec)}; "
                    "unregister it first or register this function under another name"
                )
        for name in doomed:
            del self._tools[name]
        for key in replaced:
            self._files.pop(key, None)
        self._files[registration.key] = registration
        for spec in specs:
            self._tools[spec.name] = _Entry(spec, registration.key, self._root / registration.path)
        self._prune()

    def _split(self, owner: _Key) -> None:
        """Turn a whole-file registration into one registration per remaining tool.

        Used when one of its tools is unregistered, so that `registrations()` does not bring it back.
        """
        whole = self._files[owner]
        files: dict[_Key, _FileRegistration] = {}
        for key, registration in self._files.items():
            if key != owner:
                files[key] = registration
                continue
            for name, entry in self._tools.items():
                if entry.owner == owner and entry.spec.source is not None:
                    single = dataclasses.replace(whole, function=entry.spec.source.function)
                    files[single.key] = single
                    self._tools[name] = dataclasses.replace(entry, owner=single.key)
        self._files = files

    def _prune(self) -> None:
        owners = {entry.owner for entry in self._tools.values()}
        self._files = {key: r for key, r in self._files.items() if key in owners}

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """Leave the registry exactly as it was if anything inside raises."""
        tools, files = dict(self._tools), dict(self._files)
        try:
            yield
        except BaseException:
            self._tools, self._files = tools, files
            raise

    def _locate(self, path: str) -> tuple[str, Path]:
        """Resolve `path` (symlinks included) and insist it is a .py file inside the workspace."""
        resolved = self._resolve(path)
        if not resolved.is_relative_to(self._root):
            raise RegistrationError(f"{path} is outside the workspace {self._root}")
        if not resolved.exists():
            raise RegistrationError(f"{path}: no such file in the workspace")
        if not resolved.is_file():
            raise RegistrationError(f"{path} is not a file")
        if resolved.suffix != ".py":
            raise RegistrationError(f"{path} is not a Python file (.py)")
        return resolved.relative_to(self._root).as_posix(), resolved

    def _relative_or_none(self, path: str) -> str | None:
        resolved = self._resolve(path)
        return resolved.relative_to(self._root).as_posix() if resolved.is_relative_to(self._root) else None

    def _resolve(self, path: str) -> Path:
        candidate = Path(path)
        return (candidate if candidate.is_absolute() else self._root / candidate).resolve()

    def _source_of(self, name: str) -> ExternalTools | None:
        return next((source for source in self._sources if source.get(name) is not None), None)

    def _names(self) -> str:
        return ", ".join(spec.name for spec in self.list_tools()) or "(none)"


def _spec(registration: _FileRegistration, described: DescribedTool) -> ToolSpec:
    options = registration.options.over(described.options)
    return ToolSpec(
        name=described.name,
        description=described.description,
        input_schema=described.input_schema,
        source=dataclasses.replace(described.source, path=registration.path),
        requires_approval=options.asks,
        idempotent=options.idempotent,
        timeout_sec=options.timeout_sec,
        hints=options.hints,
        output_schema=described.output_schema,
        declared_schema=described.declared_schema,
    )


def _client_validator(name: str, schema: Any) -> Draft202012Validator:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict):
        raise RegistrationError(f"inputSchema of client tool '{name}' must be a JSON object")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise RegistrationError(
            f"inputSchema of client tool '{name}' is not a valid JSON Schema (2020-12): {exc.message}"
        ) from exc
    if schema.get("type", "object") != "object":
        raise RegistrationError(f"inputSchema of client tool '{name}' must describe an object (type: object)")
    return Draft202012Validator(schema)


def _check_name(name: str, *, hint: str = "") -> None:
    if not _TOOL_NAME.match(name):
        where = f" ({hint}; pass name to choose another)" if hint else ""
        raise RegistrationError(f"invalid tool name '{name}'{where}: use 1-64 letters, digits, '_' or '-'")


def _origin(spec: ToolSpec) -> str:
    return (
        "the client" if spec.client or spec.source is None else f"{spec.source.path}:{spec.source.function}"
    )
