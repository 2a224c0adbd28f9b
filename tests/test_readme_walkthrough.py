"""The tutorial's vendoring walk-through, run as written (issues 11 and 17).

The tutorial's four pages (:data:`PAGES`: vendor a revision, first server (``app.py`` on
``McpApp``, then ``server.py`` on the vendored handlers), first client,
upgrade; it was the README's section "Vendor a revision into your project") are read block by
block, in order, into one empty project folder: each ``sh`` block's lines are run (``pip install`` excepted: the test
runs in the installed venv, whose ``bin`` comes first on ``PATH``); a ``python`` block marked
``<!-- walkthrough: FILE -->`` is written to FILE; a ``diff`` block marked
``<!-- walkthrough: patch FILE -->`` is applied to FILE; a ``text`` block marked
``<!-- walkthrough: printed -->`` is what the last command before it printed (that command may
then fail, as the upgrade's type check does). Every other command must succeed. A printed
block with a ``[... N lines ...]`` line is the whole output, trimmed: each such line stands
for exactly N lines of it, every other line is the output's line at that place.

mypy finds the runtime as a user's mypy does: installed in the venv (the README's editable
install is a plain ``.pth`` line, which mypy follows; ``tests/test_editable_types.py``), with
no ``MYPYPATH`` and no mypy configuration.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT

TUTORIAL = REPO_ROOT / "docs" / "tutorial"
#: The walk-through's pages, in the order they are read (each continues the last).
PAGES = ("vendoring.md", "first-server.md", "first-client.md", "upgrading.md")
MARKER = re.compile(r"^<!-- walkthrough: (.+) -->$")
#: In a printed block: this many lines of the output left out.
OMITTED = re.compile(r"^\[\.\.\. (\d+) lines? \.\.\.\]$")


def shows(printed: str, output: str) -> bool:
    """Whether ``printed`` (a printed block) shows ``output``: a part of it, or, trimmed with
    ``[... N lines ...]`` lines, all of it (trailing spaces aside)."""
    lines = printed.strip("\n").splitlines()
    if not any(OMITTED.match(line) for line in lines):
        return printed.strip() in output
    actual = [line.rstrip() for line in output.splitlines()]
    position = 0
    for line in lines:
        omitted = OMITTED.match(line)
        if omitted is not None:
            position += int(omitted.group(1))
        elif position < len(actual) and actual[position] == line.rstrip():
            position += 1
        else:
            return False
    return position == len(actual)


@dataclass
class Block:
    language: str
    text: str
    marker: str | None


def walkthrough() -> list[Block]:
    """Every fenced block of the tutorial's pages, in order, each with its marker."""
    missing = [name for name in PAGES if not (TUTORIAL / name).is_file()]
    assert not missing, f"the tutorial has no {missing} (docs/tutorial/)"
    text = "\n".join((TUTORIAL / name).read_text(encoding="utf-8") for name in PAGES)
    blocks: list[Block] = []
    marker: str | None = None
    lines = iter(text.splitlines())
    for line in lines:
        found = MARKER.match(line)
        if found:
            marker = found.group(1)
        elif line.startswith("```"):
            body = []
            for inner in lines:
                if inner.startswith("```"):
                    break
                body.append(inner)
            blocks.append(Block(line[3:].strip(), "\n".join(body) + "\n", marker))
            marker = None
    return blocks


def run(command: str, project: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "MCP_CODEGEN_OFFLINE": "1",
    }
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )


def test_the_vendoring_walkthrough_runs_as_written(tmp_path: Path) -> None:
    project = tmp_path / "weather"
    project.mkdir()
    blocks = walkthrough()
    kinds = [(b.language, b.marker) for b in blocks]
    assert ("python", "server.py") in kinds and ("python", "client.py") in kinds
    assert any(language == "diff" for language, _ in kinds)
    ran: list[str] = []
    for index, block in enumerate(blocks):
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        if block.language == "sh":
            commands = [c for c in block.text.splitlines() if c.strip() and not c.startswith("pip install")]
            for number, command in enumerate(commands):
                result = run(command, project)
                ran.append(command)
                output = result.stdout + result.stderr
                printed = following is not None and following.marker == "printed"
                if printed and number == len(commands) - 1:
                    assert following is not None
                    assert shows(following.text, output), f"$ {command}\n{output}"
                else:
                    assert result.returncode == 0, f"$ {command}\n{output}"
        elif block.language == "python":
            assert block.marker and block.marker.endswith(".py"), block.text[:80]
            (project / block.marker).write_text(block.text, encoding="utf-8")
        elif block.language == "diff":
            assert block.marker and block.marker.startswith("patch "), block.text
            target = project / block.marker.removeprefix("patch ")
            removed = [line[1:] for line in block.text.splitlines() if line.startswith("-")]
            added = [line[1:] for line in block.text.splitlines() if line.startswith("+")]
            source = target.read_text(encoding="utf-8")
            for old, new in zip(removed, added, strict=True):
                assert source.count(old + "\n") == 1, old
                source = source.replace(old + "\n", new + "\n")
            target.write_text(source, encoding="utf-8")
        else:
            assert block.language == "text" and block.marker == "printed", block
    assert ran == [
        "mcp-codegen --offline --version 2025-06-18 --out weather_mcp",
        "mypy --strict app.py",
        "mypy --strict server.py client.py",
        "python client.py",
        "mcp-codegen diff weather_mcp 2025-11-25",
        "mcp-codegen --offline --version 2025-11-25 --out weather_mcp",
        "mypy --strict server.py client.py",
        "mypy --strict server.py client.py",
        "python client.py",
    ]
    # the last run, after the upgrade, printed what the first did
    assert "Sunny, 21 °C" in run("python client.py", project).stdout


@pytest.mark.parametrize("name", ["app.py", "server.py", "client.py"])
def test_the_walkthroughs_code_is_lint_clean(name: str, tmp_path: Path) -> None:
    block = next(b for b in walkthrough() if b.marker == name)
    (tmp_path / name).write_text(block.text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(REPO_ROOT / "pyproject.toml"), name],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("printed", "output", "shown"),
    [
        ("b\n", "a\nb\nc\n", True),
        ("a\n[... 1 line ...]\nc\n", "a\nb\nc\n", True),
        ("[... 2 lines ...]\nc  \n", "a\nb\nc\n", True),
        ("a\n[... 2 lines ...]\n", "a\nb\nc\n", True),
        ("a\n[... 1 line ...]\n", "a\nb\nc\n", False),  # the output goes on
        ("a\n[... 2 lines ...]\nc\n", "a\nb\nc\n", False),  # not that many
        ("b\n[... 1 line ...]\n", "a\nb\nc\n", False),  # a trimmed block starts at the top
    ],
)
def test_a_trimmed_printed_block_counts_the_lines_it_leaves_out(printed: str, output: str, shown: bool) -> None:
    assert shows(printed, output) is shown
