"""Tool calls confined by the kernel: where a tool may write, and whether it may reach the network.

Fault model: a tool is code the model chose arguments for, running as the user; it may be careless
or hostile, and whatever it starts inherits what it was given. Approval decides whether a call runs;
this module decides what a running call can touch, whatever it tries.

A `Confinement` is applied once per tool host process, by `apply`, before any workspace code runs
(`host_main`), and is inherited by every process the tools start. On Linux, in this order:

1. `PR_SET_NO_NEW_PRIVS`: no set-user-id program or file capability gains rights under a tool.
2. A user namespace with its own mount namespace, and its own network namespace when the network is
   off: an empty one, where not even the loopback device is up, so no TCP, UDP, DNS or abstract Unix
   socket reaches anything outside. The protected paths that exist (`.git`, `.mini-agent`, the `.env`
   files at the workspace root) are bound read-only over themselves. Which exist is part of the
   confinement, read at each call: one created since a host started (a `git init`) gets a new host
   that binds it, rather than a host that left it writable.
3. Landlock: writing, creating, removing, renaming and truncating only beneath `writable` (device
   files under /dev may still be written, e.g. /dev/null); with the network off, TCP bind and connect
   refused as well (ABI 4), and signals and abstract sockets kept within the sandbox (ABI 6). A
   Landlock domain also forbids mounting, so the read-only binds of step 2 stay read-only.

What it does not cover: reading (a tool may read every file the user may), and other kernels'
mechanisms (macOS, Windows: `available()` says tools run unconfined there). Where the kernel lacks a
part a confinement needs, `apply` raises `Unavailable`, naming the part and the user-level setting
that accepts running unconfined: nothing runs unconfined silently.

The kernel is reached through `ctypes` (three Landlock system calls, `unshare`, `mount`, `prctl`) in
this module only. `MINI_AGENT_SANDBOX_PRETEND` (test drills only) makes `available()` report a missing
part: `no-landlock` or `no-userns`.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import platform
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mini_agent.core.contracts import Expansion
from mini_agent.tools.protocol import CallResult

PRETEND_ENV = "MINI_AGENT_SANDBOX_PRETEND"
# Set in a confined process for what it starts. A sandbox inside the sandbox (`mini-agent mcp` run as a
# stdio MCP server, whose tool hosts confine themselves) can neither mount nor map a user namespace
# (/proc is not writable there): it adds Landlock's limits to the outer sandbox's, whose namespaces and
# read-only binds it inherits. Setting it outside a sandbox only leaves the namespaces out of one's own.
CONFINED_ENV = "MINI_AGENT_CONFINED"
SANDBOX_ENV = "MINI_AGENT_SANDBOX"  # `off`: the user's own way to run tools unconfined (any door)
SETTING = 'the user-level setting `tools.sandbox = "off"` (or MINI_AGENT_SANDBOX=off in the environment)'
# Inside a writable root, what stays read-only: the repository's history and hooks, our own state,
# and the secrets a project keeps beside its code.
PROTECTED = (".git", ".mini-agent", ".env", ".env.local")

# Landlock (include/uapi/linux/landlock.h)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_FS_WRITE_FILE = 1 << 1
_FS_REMOVE_DIR, _FS_REMOVE_FILE = 1 << 4, 1 << 5
_FS_MAKE = (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12)  # char … sym
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
# namespaces, mounts, prctl
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
_ST_TO_MS = {1: _MS_RDONLY, 2: _MS_NOSUID, 4: _MS_NODEV, 8: _MS_NOEXEC, 1024: _MS_NOATIME,
             2048: _MS_NODIRATIME, 4096: _MS_RELATIME}  # fmt: skip  # statvfs f_flag → mount flags
_PR_SET_NO_NEW_PRIVS = 38


class Unavailable(Exception):
    """The kernel lacks a part this confinement needs; the message names it and the setting."""


@dataclass(frozen=True, slots=True)
class Confinement:
    """What one tool host's tools may do: write beneath `writable` (except `protected` paths there),
    and reach the network when `network`."""

    writable: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    network: bool = False
    label: str = field(default="", compare=False)  # how the docs and messages name it

    def to_json(self) -> str:
        """How the daemon hands it to a tool host (`from_json` reads it there)."""
        return json.dumps({"writable": self.writable, "protected": self.protected, "network": self.network})

    @classmethod
    def from_json(cls, text: str) -> Confinement:
        given = json.loads(text)
        return cls(tuple(given["writable"]), tuple(given["protected"]), bool(given["network"]))

    def words(self) -> str:
        """The confinement in a few words, for an observation or the doctor."""
        writes = "writes to " + ", ".join(self.writable) if self.writable else "no writes"
        return f"{writes}; {'network' if self.network else 'no network'}"


def for_tool(root: Path, temp: str, *, read_only: bool | None, open_world: bool | None) -> Confinement:
    """What a tool's declarations give it: `read_only` no writes at all; `open_world` the network and
    writes to the workspace and the temp folder `temp`; otherwise those writes and no network."""
    if read_only:
        return Confinement(network=bool(open_world), label="read-only")
    writable = tuple(dict.fromkeys((str(root), os.path.realpath(temp))))
    protected = protected_paths(root)
    label = "open-world" if open_world else "workspace"
    return Confinement(writable, protected, network=bool(open_world), label=label)


def protected_paths(root: Path) -> tuple[str, ...]:
    """The protected paths of `root` that exist now (a link among them too: it is never followed)."""
    return tuple(path for path in (str(root / name) for name in PROTECTED) if os.path.lexists(path))


# Where a stdio MCP server keeps its state (npx's and uvx's caches, logs), writable beside the workspace.
SERVER_STATE = ("~/.cache", "~/.npm", "~/.local/state")


def for_server(root: Path, temp: str, *, network: bool, writable: tuple[str, ...] = ()) -> Confinement:
    """A stdio MCP server's confinement: its entry's `network` and `writable`, the workspace, the temp
    folder and its usual state; the same protected paths as a tool's."""
    state = (os.path.expanduser(path) for path in (*SERVER_STATE, *writable))
    roots = tuple(dict.fromkeys((str(root), os.path.realpath(temp), *state)))
    protected = protected_paths(root)
    return Confinement(roots, protected, network=network, label="mcp-server")


# A refused connection or name lookup, as Python and the C library word it; a refused write, with its path.
_NETWORK_REFUSALS = ("Network is unreachable", "Temporary failure in name resolution",
                     "Name or service not known")  # fmt: skip
# Landlock refuses a TCP connect with EACCES; Python words it without a path (a refused write has one).
_PATHLESS_DENIAL = re.compile(r"\[Errno 13\] Permission denied(?!: ')")
_WRITE_REFUSAL = re.compile(
    r"\[Errno (?:13|30)\] (?:Permission denied|Read-only file system): '([^'\n]{1,4096})'"
)


def expansion_for(output: str, confinement: Confinement) -> Expansion | None:
    """What would let a call the sandbox refused run, read off its error: the network, when a
    connection or a lookup failed with the network off; writes beneath the folder of a path whose write
    was refused, unless it is a protected path (never offered) or the folder is `/`. None otherwise."""
    if not confinement.network and (
        any(refusal in output for refusal in _NETWORK_REFUSALS) or _PATHLESS_DENIAL.search(output)
    ):
        return Expansion(network=True)
    match = _WRITE_REFUSAL.search(output)
    if match is None:
        return None
    path = os.path.realpath(match.group(1))
    if any(_within(path, os.path.realpath(guarded)) for guarded in confinement.protected):
        return None
    folder = path
    while folder != os.path.dirname(folder) and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return None if folder == os.path.dirname(folder) else Expansion(write=folder)


def expanded(confinement: Confinement, expansion: Expansion) -> Confinement:
    """`confinement` with a person's grant for one call; the protected paths stay read-only."""
    if expansion.network:
        return dataclasses.replace(confinement, network=True, label=f"{confinement.label}, with the network")
    if expansion.write is None:
        return confinement
    writable = (*confinement.writable, expansion.write)
    label = f"{confinement.label}, writes to {expansion.write}"
    return dataclasses.replace(confinement, writable=writable, label=label)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


# How a refusal of the sandbox reads in a tool's error: the errors the kernel gives a refused write
# (EACCES, EROFS) or connection (EACCES, ENETUNREACH), and a name that cannot be resolved.
_REFUSALS = ("Permission denied", "Read-only file system", "Network is unreachable",
             "Temporary failure in name resolution")  # fmt: skip


def explained(result: CallResult, confinement: Confinement) -> CallResult:
    """A failed call's result, with a note naming the sandbox where its error reads like a refusal of
    it: the model and the person learn what the tool may touch, and what would let it."""
    if not any(refusal in result.output for refusal in _REFUSALS):
        return result
    note = (
        f"\nNote: this tool runs in the sandbox ({confinement.words()}); an error above that refuses a "
        "write or a connection is the sandbox's. A tool that needs the network declares "
        "open_world=True; writes go to the workspace or the temp folder."
    )
    return dataclasses.replace(result, output=result.output + note)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (disabled, too old, not Linux)."""
    if sys.platform != "linux" or os.environ.get(PRETEND_ENV) == "no-landlock":
        return 0
    version = _syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    return max(version, 0)


def available() -> str | None:
    """None where every part `apply` uses is there; else what is missing, in words."""
    if sys.platform != "linux":
        return f"tools run unconfined on {platform.system()} (only Linux's Landlock is used so far)"
    abi = landlock_abi()
    if abi < 1:
        return "the kernel offers no Landlock (it is off, or older than Linux 5.13)"
    if os.environ.get(PRETEND_ENV) == "no-userns" or not Path("/proc/self/ns/user").exists():
        return "the kernel does not let this user create user namespaces"
    for switch, off, words in _USERNS_SWITCHES if os.getuid() != 0 else ():  # root is not held by them
        if _read(switch) == off:
            return f"user namespaces are turned off for this user ({switch} is {off}: {words})"
    return None


# Where distributions turn unprivileged user namespaces off (value meaning off, and whose switch it is).
_USERNS_SWITCHES = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0", "Debian's switch"),
    ("/proc/sys/user/max_user_namespaces", "0", "no user namespace may be made"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor's, as on Ubuntu 24.04"),
)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def wanted(*, turned_off: bool) -> bool:
    """Whether the user wants tools confined: not `turned_off` in the settings, nor SANDBOX_ENV=off."""
    return not turned_off and os.environ.get(SANDBOX_ENV, "").lower() != "off"


def state(*, turned_off: bool) -> tuple[str, str]:
    """What tool calls get here, for the doctor and the doors' announcements: `on` (confined), `off`
    (the user said so: `turned_off`, or SANDBOX_ENV), `unavailable` (Linux lacking a part: calls fail,
    naming it) or `unconfined` (another system); and the detail in words."""
    if not wanted(turned_off=turned_off):
        return "off", "turned off by the user: tools run unconfined"
    missing = available()
    if missing is None:
        return "on", "no new privileges; user, mount and network namespaces; Landlock"
    if sys.platform != "linux":
        return "unconfined", f"{missing}; approval is the guard"
    return "unavailable", f"{missing}: a tool call fails, naming it"


def apply(confinement: Confinement) -> None:
    """Confine this process and everything it starts, for good. Must run single-threaded, before any
    tool code; raises `Unavailable` (nothing applied that matters) where the kernel lacks a part."""
    missing = available()
    if missing is not None:
        raise Unavailable(f"cannot confine tools: {missing}; {SETTING} runs them unconfined")
    abi = landlock_abi()
    if not _prctl(_PR_SET_NO_NEW_PRIVS, 1):
        raise Unavailable(f"cannot confine tools: PR_SET_NO_NEW_PRIVS failed ({_errno()}); {SETTING}")
    try:
        if not os.environ.get(CONFINED_ENV):
            _namespaces(confinement)
        _landlock(confinement, abi)
    except OSError as exc:  # a /proc file the namespace needs, a root that cannot be opened
        raise Unavailable(f"cannot confine tools: {exc}; {SETTING}") from exc
    os.environ[CONFINED_ENV] = "1"


def _namespaces(confinement: Confinement) -> None:
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | (0 if confinement.network else _CLONE_NEWNET)
    if _libc().unshare(flags) != 0:
        raise Unavailable(f"cannot confine tools: unshare failed ({_errno()}); {SETTING}")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    _mount(None, "/", _MS_REC | _MS_PRIVATE)  # nothing below propagates back out
    for path in confinement.protected:
        if os.path.lexists(path) and not os.path.islink(path):
            _mount(path, path, _MS_BIND | _MS_REC)
            kept = sum(ms for st, ms in _ST_TO_MS.items() if os.statvfs(path).f_flag & st)
            _mount(None, path, kept | _MS_REMOUNT | _MS_BIND | _MS_RDONLY)


def _landlock(confinement: Confinement, abi: int) -> None:
    write = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE
    write |= (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    net = 0 if confinement.network or abi < 4 else _NET_BIND_TCP | _NET_CONNECT_TCP
    scoped = 0 if confinement.network or abi < 6 else _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
    attr = struct.pack("=QQQ", write, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _syscall(_SYS_CREATE_RULESET, buffer, len(attr), 0)
    if ruleset < 0:
        raise Unavailable(f"cannot confine tools: Landlock refused the ruleset ({_errno()}); {SETTING}")
    try:
        _allow(ruleset, "/dev", _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0))  # /dev/null, a tty
        for path in (*confinement.writable, "/dev/shm"):
            _allow(ruleset, path, write)
        if _syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise Unavailable(f"cannot confine tools: Landlock refused to restrict ({_errno()}); {SETTING}")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a root that does not exist grants nothing
    try:
        rule = ctypes.create_string_buffer(struct.pack("=Qi", access, fd), 12)
        if _syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0) != 0:
            raise Unavailable(f"cannot confine tools: Landlock refused a rule for {path} ({_errno()})")
    finally:
        os.close(fd)


def _mount(source: str | None, target: str, flags: int) -> None:
    encoded = source.encode() if source is not None else None
    if _libc().mount(encoded, target.encode(), None, flags, None) != 0:
        raise Unavailable(f"cannot confine tools: mount of {target} failed ({_errno()}); {SETTING}")


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _syscall(number: int, *args: object) -> int:
    return int(_libc().syscall(ctypes.c_long(number), *args))


def _prctl(option: int, value: int) -> bool:
    return int(_libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0)) == 0


def _errno() -> str:
    return os.strerror(ctypes.get_errno())
