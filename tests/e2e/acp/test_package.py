"""The package as a user gets it: `python -m build` makes a wheel and an sdist from a copy of the
checkout; with no checkout and no model variable, `uvx --from <wheel> mini-agent setup` (through a real
pty) keeps a scripted model server, and acpx, launching `uvx --from <wheel> mini-agent acp`, finishes the
seed task. Downloads the dependencies into a fresh uv cache (tens of seconds)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pexpect
import pytest
from mini_agent.cli.demo import ANSWER, SCRIPT, TASK
from mini_agent.scripted import ReplayServer

from ...support.acp import run_acpx, said
from ...support.daemon import ROOT
from ...support.scripted import non_empty_lines

UVX = shutil.which("uvx", path=str(Path(sys.executable).parent)) or "uvx"


def built(tmp_path: Path) -> tuple[Path, Path]:
    """The wheel and the sdist, built from a copy of what a clone holds."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "server", "clients"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, clone / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, clone / name)
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(clone)], check=True,
                   capture_output=True, timeout=600)
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    return wheel, sdist


def setup_in_a_pty(wheel: Path, env: dict[str, str], cwd: Path, base_url: str) -> None:
    child = pexpect.spawn(UVX, ["--from", str(wheel), "mini-agent", "setup"], env=env, cwd=str(cwd),
                          encoding="utf-8", timeout=300)
    child.expect("model server's URL")
    child.sendline(base_url)
    child.expect("API key")
    child.sendline("")
    child.expect(r"Which model \(a number, or a name\)")
    child.sendline("1")
    child.expect("Saved to")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.fresh_clone
@pytest.mark.asyncio
async def test_the_wheel_run_by_uvx_is_set_up_in_a_terminal_and_finishes_the_seed_task(
    tmp_path: Path,
) -> None:
    wheel, sdist = await asyncio.to_thread(built, tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        members = archive.namelist()
        entry_points = archive.read(next(m for m in members if m.endswith("entry_points.txt"))).decode()
    for needed in ("mini_agent/examples/workspace/tools.py", "mini_agent/scripted/server.py",
                   "mini_agent/py.typed", "mini_agent_client/client.py"):
        assert needed in members, needed
    assert "mini-agent = mini_agent.cli.main:main" in entry_points
    with tarfile.open(sdist) as archive:
        sdist_names = {Path(name).name for name in archive.getnames()}
    assert {"pyproject.toml", "README.md", "LICENSE"} <= sdist_names

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    shutil.copytree(ROOT / "server" / "mini_agent" / "examples" / "workspace", work)
    (work / "pyproject.toml").write_text('[tool.mini-agent]\ntools = ["tools.py"]\n', encoding="utf-8")
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "MINI_AGENT_STATE_DIR", "XDG_STATE_HOME", "OPENAI_BASE_URL",
               "OPENAI_API_KEY", "MINI_AGENT_MODEL")
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    env.update(HOME=str(home), UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    env["PATH"] = os.pathsep.join([str(Path(UVX).parent), env["PATH"]])
    async with ReplayServer([{"content": "OK"}, *SCRIPT]) as model:
        await asyncio.to_thread(setup_in_a_pty, wheel, env, work, model.base_url)
        agent = f"{UVX} --from {wheel} mini-agent acp --trust"
        code, stream, err = await run_acpx(work, home, "exec", TASK, agent=agent, env=env)
    assert code == 0, err
    updates = [m["params"]["update"] for m in stream if m.get("method") == "session/update"]
    assert said(updates) == ANSWER.format(count=non_empty_lines(work / "schema.py"))
