"""Every code sample of the documentation runs, or at least type-checks (issue 17).

The pages: ``README.md`` and ``docs/**/*.md``, but ``docs/tutorial/`` (its four pages are one
walk-through, run by ``tests/test_readme_walkthrough.py``). The rule: every ```` ```python ````
block of a page carries, on the line just before it, one of these markers (an unmarked one
fails :func:`test_every_python_sample_is_marked`):

``<!-- sample: file NAME -->``
    written to NAME in the page's own empty folder (any language: a server, an ``mcp.json``).
``<!-- sample: sh -->``
    (on a ```` ```sh ```` block) each line run with bash in that folder, in order; it must
    succeed (``mcp-codegen`` to vendor a package, say).
``<!-- sample: program -->``
    a complete program: run with this interpreter in that folder, after the blocks above it
    on the page, within :data:`TIMEOUT` seconds; it must exit 0. If the next block is a
    ```` ```text ```` block marked ``<!-- sample: output -->``, the program's output must be
    exactly that text. A server sample is exercised by a program that connects to it. The
    page's python files and programs are then type-checked with ``mypy --strict``.
``<!-- sample: fragment -->``
    a piece of a program (``async with`` and ``await`` at top level allowed): it is wrapped in
    an ``async def`` and type-checked, with every other fragment, by ``mypy --strict``
    against the installed runtime (:func:`test_fragments_type_check`), so a renamed option,
    a wrong argument or a syntax error fails.

Pages run as subprocesses, one folder each, with the venv's ``bin`` first on ``PATH``
(``python`` and ``mcp-codegen`` are this venv's) and no network for the generator.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
WALKTHROUGH = DOCS / "tutorial"
MARKER = re.compile(r"^<!-- sample: (program|fragment|sh|output|file [\w./-]+) -->$")
TIMEOUT = 60.0


@dataclass
class Block:
    page: Path
    line: int
    language: str
    text: str
    marker: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"


def pages() -> list[Path]:
    found = [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [page for page in found if WALKTHROUGH not in page.parents]


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of a page, each with the marker on the line before it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            previous = lines[index - 1] if index else ""
            found = MARKER.match(previous)
            start = index
            body: list[str] = []
            index += 1
            while index < len(lines) and not lines[index].startswith("```"):
                body.append(lines[index])
                index += 1
            text = "\n".join(body) + "\n"
            blocks.append(Block(page, start + 1, line[3:].strip(), text, found.group(1) if found else None))
        index += 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks_of(page)]


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "MCP_CODEGEN_OFFLINE": "1",
    }


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for every check of this module: the runtime is analysed once."""
    return tmp_path_factory.mktemp("mypy-cache")


def test_every_python_sample_is_marked() -> None:
    unmarked = [b.where for b in all_blocks() if b.language == "python" and b.marker in (None, "output", "sh")]
    assert not unmarked, (
        "mark each python sample <!-- sample: program -->, <!-- sample: file NAME --> or "
        f"<!-- sample: fragment --> (tests/test_docs_samples.py): {unmarked}"
    )
    outputs = [b for b in all_blocks() if b.marker == "output"]
    assert all(b.language == "text" for b in outputs), [b.where for b in outputs if b.language != "text"]


def pages_with_programs() -> list[Path]:
    return [page for page in pages() if any(b.marker == "program" for b in blocks_of(page))]


@pytest.mark.parametrize(
    "page", pages_with_programs(), ids=lambda page: str(page.relative_to(REPO_ROOT))
)
def test_the_programs_of_a_page_run(page: Path, tmp_path: Path, mypy_cache: Path) -> None:
    blocks = blocks_of(page)
    ran = 0
    checked: list[str] = []
    for index, block in enumerate(blocks):
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        if block.marker is None or block.marker in ("fragment", "output"):
            continue
        if block.marker.startswith("file "):
            name = block.marker.removeprefix("file ")
            (tmp_path / name).write_text(block.text, encoding="utf-8")
            if name.endswith(".py"):
                checked.append(name)
        elif block.marker == "sh":
            for command in filter(str.strip, block.text.splitlines()):
                result = subprocess.run(
                    ["bash", "-e", "-o", "pipefail", "-c", command], cwd=tmp_path,
                    env=environment(), capture_output=True, text=True, timeout=TIMEOUT,
                )
                assert result.returncode == 0, f"{block.where}: $ {command}\n{result.stdout}{result.stderr}"
        elif block.marker == "program":
            program = tmp_path / f"program_{block.line}.py"
            program.write_text(block.text, encoding="utf-8")
            result = subprocess.run(
                [sys.executable, program.name], cwd=tmp_path, env=environment(),
                capture_output=True, text=True, timeout=TIMEOUT,
            )
            assert result.returncode == 0, f"{block.where} exited {result.returncode}:\n{result.stdout}{result.stderr}"
            if following is not None and following.marker == "output":
                assert result.stdout.strip() == following.text.strip(), (
                    f"{block.where} printed\n{result.stdout}\nnot what {following.where} shows"
                )
            ran += 1
            checked.append(program.name)
    assert ran
    # what ran is typed as well: the page's python files and programs, as a user's CI would
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(mypy_cache), *checked],
        cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, f"{page.relative_to(REPO_ROOT)}: mypy --strict\n{result.stdout}{result.stderr}"


def test_fragments_type_check(tmp_path: Path, mypy_cache: Path) -> None:
    fragments = [b for b in all_blocks() if b.marker == "fragment"]
    assert fragments, "no fragment found: the collector is broken"
    names: dict[str, Block] = {}
    for number, block in enumerate(fragments):
        name = f"fragment_{number}.py"
        body = textwrap.indent(block.text, "    ")
        (tmp_path / name).write_text(f"async def _fragment() -> None:\n{body}    return None\n", encoding="utf-8")
        names[name] = block
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(mypy_cache), *names],
        cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=300,
    )
    report = result.stdout + result.stderr
    for name, block in names.items():
        report = report.replace(name, f"{name} ({block.where})")
    assert result.returncode == 0, report
