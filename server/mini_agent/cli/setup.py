"""`mini-agent setup`: the user's model server, asked for in plain prompts and kept for every door.

It offers the servers listening on this machine's usual ports (llama.cpp, Ollama, LM Studio, vLLM and
llama-cpp-python), or takes any URL; asks for the API key without echo (or the name of the variable
that holds it, as `$NAME`; Enter for none); offers the models the server lists; sends one tiny chat
request; and keeps the answers in the user's state folder (`app.user_settings`: 0600, never in a
repository). Every answer can come as a flag instead, and over a pipe the prompts read plain lines,
so scripts and tests drive it the same way. Questions go to stderr, the outcome (where it was saved)
to stdout. The key is never printed, logged or put in a URL.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

from mini_agent.app import user_settings
from mini_agent.app.user_settings import UserSettings
from mini_agent.cli.terminal import safe
from mini_agent.core.contracts import LLMConfig, LLMError, Message, Role
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.models import ModelList, ModelLister, unsafe

LOCAL_SERVERS = (
    ("llama.cpp (llama-server)", "http://127.0.0.1:8080/v1"),
    ("vLLM or llama-cpp-python", "http://127.0.0.1:8000/v1"),
    ("Ollama", "http://127.0.0.1:11434/v1"),
    ("LM Studio", "http://127.0.0.1:1234/v1"),
)
PROBE_TIMEOUT_SEC = 1.0  # each local port; all are asked at once
LIST_TIMEOUT_SEC = 5.0  # the chosen server's model list
CHECK_TIMEOUT_SEC = 60.0  # the test request (a server may load the model first)
SHOWN = 20  # models offered by number


class SetupAborted(Exception):
    """The person ended the set-up (end of input, or no to saving a server that failed its check)."""


@dataclass
class Prompts:
    """Questions on `out`, answers from `src`: a terminal's line editing and hidden input when `src`
    is one, plain lines otherwise (a pipe, a test)."""

    src: TextIO
    out: TextIO
    hidden: Callable[[str], str] | None = None  # how a secret is read on a terminal (getpass)

    def line(self, question: str, default: str = "") -> str:
        shown = f"{question} [{safe(default)}]: " if default else f"{question}: "
        self.out.write(shown)
        self.out.flush()
        answer = self.src.readline()
        if not answer:
            raise SetupAborted("the input ended before the set-up was done")
        return answer.strip() or default

    def secret(self, question: str) -> str:
        if self.hidden is not None and self.src.isatty():
            return self.hidden(f"{question}: ").strip()
        return self.line(question)

    def tell(self, words: str) -> None:
        self.out.write(words + "\n")
        self.out.flush()


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    setup = commands.add_parser("setup", help="choose the model server every door uses (kept for you alone)")
    setup.add_argument("--base-url", help="the server's OpenAI-compatible URL, e.g. http://127.0.0.1:8080/v1")
    setup.add_argument("--model", help="the model to use there")
    key = setup.add_mutually_exclusive_group()
    key.add_argument("--api-key-env", metavar="NAME", help="the environment variable that holds the API key")
    key.add_argument("--no-api-key", action="store_true", help="the server needs no API key")
    setup.add_argument("--skip-check", action="store_true", help="save without the test request")
    setup.add_argument("--sandbox", choices=["on", "off"],
                       help="run workspace tools confined by the kernel (on, the default) or not (off: your "
                            "choice alone; no workspace file can make it); kept when not given")


def setup_command(args: argparse.Namespace, prompts: Prompts | None = None) -> int:
    """Run the set-up; 0 when saved, 1 when the person stopped it."""
    prompts = prompts or Prompts(sys.stdin, sys.stderr, getpass.getpass)
    try:
        settings = asyncio.run(_ask(args, prompts))
    except SetupAborted as stop:
        prompts.tell(f"Nothing was saved: {stop}.")
        return 1
    try:
        where = user_settings.save(settings)
    except (OSError, ValueError) as exc:  # a value the file cannot hold (a bad variable name)
        prompts.tell(f"Nothing was saved: {safe(exc)}.")
        return 1
    print(f"Saved to {safe(where)} (readable by you alone).", flush=True)  # the outcome: on stdout
    prompts.tell("Every editor and `mini-agent` use it from now on; a workspace's own file or")
    prompts.tell("OPENAI_BASE_URL still chooses where they say so.")
    return 0


async def _ask(args: argparse.Namespace, prompts: Prompts) -> UserSettings:
    base_url = args.base_url or await _server(prompts)
    if not base_url.startswith(("http://", "https://")):
        raise SetupAborted(f"{safe(base_url)} is not an http:// or https:// URL")
    key, key_env = _key(args, prompts)
    using = key or (os.environ.get(key_env) if key_env else None) or None
    listed = await ModelLister(LIST_TIMEOUT_SEC).models(base_url, using)
    model = args.model or _model(listed, prompts)
    if (why := unsafe(model)) is not None:
        raise SetupAborted(f"that model name cannot be used: {why}")
    if not args.skip_check:
        prompts.tell(f"Asking {safe(base_url)} for a word from {safe(model)}...")
        problem = await _test_request(base_url, model, using)
        if problem is None:
            prompts.tell("It answered.")
        else:
            prompts.tell(f"It did not answer: {safe(problem)}")
            if prompts.line("Save it anyway? (y/N)", "n").lower() not in ("y", "yes"):
                raise SetupAborted("the server did not answer the test request")
    sandbox: Literal["on", "off"] | None = args.sandbox or user_settings.sandbox_choice()
    return UserSettings(base_url, model, key or None, key_env, sandbox)



async def _test_request(base_url: str, model: str, key: str | None) -> str | None:
    """One chat request of one token through the daemon's own model client (its bounds, its words for
    a failure): None when the server answered, else why not."""
    config = LLMConfig(
        base_url=base_url, model=model, api_key=key, max_tokens=1, stream=False, max_retries=0,
        timeout_sec=CHECK_TIMEOUT_SEC, request_timeout_sec=CHECK_TIMEOUT_SEC,
    )  # fmt: skip
    async with OpenAICompatibleClient() as llm:
        try:
            await llm.generate([Message(Role.USER, "Say OK.")], [], config)
        except LLMError as exc:
            return str(exc)
    return None


async def _server(prompts: Prompts) -> str:
    """A server listening here, chosen by number, or any URL."""
    lister = ModelLister(PROBE_TIMEOUT_SEC)
    found = await asyncio.gather(*(lister.models(url, None) for _, url in LOCAL_SERVERS))
    up = [(name, listed) for (name, _), listed in zip(LOCAL_SERVERS, found, strict=True) if listed.ids]
    if not up:
        prompts.tell("No model server answers on this machine's usual ports (" +
                     ", ".join(url for _, url in LOCAL_SERVERS) + ").")
        return prompts.line("The model server's URL", LOCAL_SERVERS[1][1])
    prompts.tell("Model servers listening here:")
    for number, (name, listed) in enumerate(up, 1):
        prompts.tell(f"  {number}) {name} at {listed.base_url} ({len(listed.ids)} model(s))")
    answer = prompts.line("Which one (a number, or another URL)", "1")
    return _pick(answer, [listed.base_url for _, listed in up])


def _key(args: argparse.Namespace, prompts: Prompts) -> tuple[str, str | None]:
    """The key itself, or the name of its variable."""
    if args.no_api_key:
        return "", None
    if args.api_key_env:
        return "", args.api_key_env
    answer = prompts.secret("API key (Enter for none; $NAME to read it from that environment variable)")
    if answer.startswith("$") and len(answer) > 1:
        return "", answer[1:]
    return answer, None


def _model(listed: ModelList, prompts: Prompts) -> str:
    if not listed.ids:
        prompts.tell(f"The server lists no models ({safe(listed.problem or 'none')}).")
        return prompts.line("The model's name", "default")
    prompts.tell("Models it offers:")
    for number, model in enumerate(listed.ids[:SHOWN], 1):
        prompts.tell(f"  {number}) {safe(model)}")
    return _pick(prompts.line("Which model (a number, or a name)", "1"), list(listed.ids[:SHOWN]))


def _pick(answer: str, choices: Sequence[str]) -> str:
    if answer.isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]
    return answer
