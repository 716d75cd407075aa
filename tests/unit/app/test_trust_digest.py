"""The trust digest covers what trusting runs: the workspace modules a tool file imports (followed
through the folder with `ast`, never executed), and the workspace files an MCP server's command line
names. Real files in a temporary folder; nothing is imported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from mini_agent.app import config, trust, trust_digest


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def reached(root: Path, *tools: str, **bounds: int) -> list[str]:
    starts = [trust_digest.Start(root / tool, (root, (root / tool).parent)) for tool in tools]
    walked = trust_digest.walk(root, starts, **bounds)
    assert walked.bound is None, walked.bound
    return [str(entry["path"]) for entry in walked.files]


def workspace(tmp_path: Path, files: dict[str, str], pyproject: str = 'tools = ["tools.py"]\n') -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return write(root, {"pyproject.toml": "[tool.mini-agent]\n" + pyproject, **files})


def test_the_modules_a_tool_file_imports_are_followed_transitively(tmp_path: Path) -> None:
    root = workspace(tmp_path, {
        "tools.py": "import helper\n",
        "helper.py": "from deep import thing\n",
        "deep.py": "import json, os.path\nthing = 1\n",
        "json.py": "",  # shadows the standard library's: the workspace root comes first on sys.path
        "unused.py": "",
    })
    assert reached(root, "tools.py") == ["deep.py", "helper.py", "json.py"]


def test_a_change_to_a_module_imported_two_levels_down_asks_again(tmp_path: Path, state_dir: Path) -> None:
    root = workspace(tmp_path, {
        "tools.py": "import helper\n", "helper.py": "import deep\n", "deep.py": "x = 1\n", "other.py": "",
    })
    trust.remember(root, config.load(root))
    assert trust.is_trusted(root, config.load(root))
    (root / "other.py").write_text("import os\n", encoding="utf-8")  # not imported: still trusted
    assert trust.is_trusted(root, config.load(root))
    (root / "deep.py").write_text("x = 2\n", encoding="utf-8")
    assert not trust.is_trusted(root, config.load(root))
    trust.remember(root, config.load(root))
    (root / "deep.py").unlink()  # gone is a change too
    assert not trust.is_trusted(root, config.load(root))


def test_an_import_cycle_ends_where_a_file_was_already_seen(tmp_path: Path) -> None:
    root = workspace(tmp_path, {
        "tools.py": "import a\n", "a.py": "import b\n", "b.py": "import a\nimport tools\n",
    })
    assert reached(root, "tools.py") == ["a.py", "b.py"]


def test_packages_their_init_files_submodules_and_relative_imports_are_resolved(tmp_path: Path) -> None:
    root = workspace(tmp_path, {
        "tools.py": "from pkg import mod\nfrom pkg.sub import *\n",
        "pkg/__init__.py": "",
        "pkg/mod.py": "from . import sib\nfrom .sub.deep import f\nfrom .. import top\n",
        "pkg/sib.py": "",
        "pkg/sub/__init__.py": "from .inner import g\n",
        "pkg/sub/deep.py": "",
        "pkg/sub/inner.py": "",
        "pkg/sub/unused.py": "",
        "top.py": "",
        "ns/plain.py": "",  # a namespace package (no __init__): `import ns.plain` below
        "dyn.py": "",
        "late.py": "import ns.plain\nimport importlib\nimportlib.import_module('dyn')\n",
    })
    assert reached(root, "tools.py") == [
        "pkg/__init__.py", "pkg/mod.py", "pkg/sib.py", "pkg/sub/__init__.py", "pkg/sub/deep.py",
        "pkg/sub/inner.py", "top.py",
    ]
    assert reached(root, "late.py") == ["dyn.py", "ns/plain.py"]


def test_imports_inside_functions_and_try_blocks_count_and_bytecode_modules_are_hashed(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path, {
        "tools.py": "def f():\n    import lazy\ntry:\n    import maybe\nexcept ImportError:\n    pass\n",
        "lazy.py": "import compiled\n",
        "maybe.py": "",
        "broken.py": "def (:\n",
    })
    (root / "compiled.pyc").write_bytes(b"\x00bytecode")
    assert reached(root, "tools.py") == ["compiled.pyc", "lazy.py", "maybe.py"]
    assert reached(root, "broken.py") == []  # a file that does not parse is hashed, not followed


def test_files_outside_the_folder_are_not_followed(tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere", {"outmod.py": "import inside_too\n", "linked.py": ""})
    root = workspace(tmp_path, {
        "tools.py": "import outmod\nimport linked\nfrom .. import elsewhere\nimport sub.tools2\n",
        "sub/tools2.py": "from ... import x\n",
        "inside_too.py": "",
    })
    (root / "linked.py").symlink_to(outside / "linked.py")  # leads out of the folder: not ours
    (tmp_path / "x.py").write_text("", encoding="utf-8")
    assert reached(root, "tools.py") == ["sub/tools2.py"]


def test_a_tool_file_in_a_subfolder_also_finds_its_siblings(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"lib/tools.py": "import helper\n", "lib/helper.py": ""})
    assert reached(root, "lib/tools.py") == ["lib/helper.py"]


def test_past_the_file_bound_the_walk_stops_and_says_so(tmp_path: Path) -> None:
    chain = {f"m{n}.py": f"import m{n + 1}\n" for n in range(6)}
    root = workspace(tmp_path, {"tools.py": "import m0\n", **chain})
    start = [trust_digest.Start(root / "tools.py", (root,))]
    assert trust_digest.walk(root, start, max_files=7).bound is None
    walked = trust_digest.walk(root, start, max_files=4)
    assert walked.bound == "more than 4 files to follow"
    small = trust_digest.walk(root, start, max_bytes=30)
    assert small.bound == "more than 30 bytes of modules to read"


def test_a_folder_past_the_bound_is_never_remembered(tmp_path: Path, state_dir: Path) -> None:
    many = {f"m{n}.py": f"import m{n + 1}\n" for n in range(trust_digest.MAX_FILES)}
    root = workspace(tmp_path, {"tools.py": "import m0\n", **many})
    with pytest.raises(ValueError, match=r"cannot be remembered.*more than 500 files to follow"):
        trust.remember(root, config.load(root))
    assert trust.load_store() == {}
    assert not trust.status(root, trust.Runs.of(config.load(root))).remembered


def test_the_workspace_files_an_mcp_server_names_are_hashed(tmp_path: Path, state_dir: Path) -> None:
    root = workspace(tmp_path, {
        "srv.py": "import srvlib\n", "srvlib.py": "", "conf.json": "{}", "pkgsrv/__init__.py": "",
        "pkgsrv/main.py": "from . import part\n", "pkgsrv/part.py": "", "pkgsrv/__main__.py": "",
        "sitecustomize.py": "import sitehelp\n", "sitehelp.py": "",
    }, pyproject=(
        '[[tool.mini-agent.mcp_servers]]\nname = "a"\ncommand = "python3"\n'
        'args = ["srv.py", "--config=conf.json", "missing.py", "/bin/sh"]\n'
        '[[tool.mini-agent.mcp_servers]]\nname = "b"\ncommand = "python3"\nargs = ["-m", "pkgsrv.main"]\n'
    ))
    servers = config.load(root).mcp_servers

    def names(paths: list[Path]) -> list[str]:
        return [trust_digest.relative(root, path) for path in paths]

    named, starts = trust_digest.server_files(root, servers[0])
    # sitecustomize.py: Python's `site` imports it from the script's folder before the script runs
    assert names(named) == ["srv.py", "sitecustomize.py", "conf.json"]
    walked = trust_digest.walk(root, starts)
    assert [entry["path"] for entry in walked.files] == ["sitehelp.py", "srvlib.py"]
    named, starts = trust_digest.server_files(root, servers[1])
    assert names(named) == ["pkgsrv/__init__.py", "pkgsrv/main.py", "sitecustomize.py"]
    walked = trust_digest.walk(root, starts)
    assert [entry["path"] for entry in walked.files] == ["pkgsrv/part.py", "sitehelp.py"]
    package, _ = trust_digest.server_files(root, {"command": "python3", "args": ["-m", "pkgsrv"]})
    assert names(package) == ["pkgsrv/__init__.py", "pkgsrv/__main__.py", "sitecustomize.py"]

    trust.remember(root, config.load(root))
    for changed in ("srvlib.py", "pkgsrv/part.py", "sitehelp.py", "conf.json", "srv.py"):
        assert trust.is_trusted(root, config.load(root)), changed
        (root / changed).write_text("# changed\n", encoding="utf-8")
        assert not trust.is_trusted(root, config.load(root)), changed
        trust.remember(root, config.load(root))


def test_a_program_named_by_its_absolute_path_inside_the_folder_counts(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"bin/serve": "#!/bin/sh\n"})
    odd = ["x" * 5000, "a\0b", "--f=" + "y" * 5000, str(tmp_path), "..", "/"]  # none a file inside
    server = {"name": "s", "command": str(root / "bin" / "serve"), "args": odd}
    named, _ = trust_digest.server_files(root, server)
    assert [trust_digest.relative(root, path) for path in named] == ["bin/serve"]
    assert trust_digest.server_files(root, {"name": "h", "url": "http://x/mcp"}) == ([], [])


def test_a_folder_whose_tools_import_nothing_of_it_keeps_its_earlier_digest(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"tools.py": "import json\n"}, pyproject=(
        'tools = ["tools.py"]\n[[tool.mini-agent.mcp_servers]]\nname = "d"\ncommand = "d"\nargs = ["--x"]\n'
    ))
    runs = trust.Runs.of(config.load(root))
    data = (root / "tools.py").read_bytes()
    earlier = {  # the digest's shape before imports and server files were hashed
        "tools": [{"path": "tools.py", "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}],
        "mcpServers": [dict(server) for server in runs.mcp_servers], "baseUrl": None, "allow": [],
    }
    text = json.dumps(earlier, sort_keys=True, separators=(",", ":"), default=str)
    assert runs.digest(root) == hashlib.sha256(text.encode()).hexdigest()
