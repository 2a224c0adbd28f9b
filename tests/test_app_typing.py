"""``mypy --strict`` on user code written with McpApp: a decorated function keeps its own
signature (a call with a wrong argument is an error), prompts and templates too, and the
Context's log level is checked. Every line marked ``# error: CODE`` must have that error,
every ``# reveal: TYPE`` that revealed type, and no other line any error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT

USER_CODE = '''\
from typing import Literal

from pydantic import BaseModel

from typedmcp.app import Context, McpApp


class Note(BaseModel):
    id: int
    title: str


app = McpApp("notes", version="1.0.0")


@app.tool(annotations={"readOnlyHint": False})
def add_note(title: str, priority: Literal["low", "high"] = "low") -> Note:
    return Note(id=1, title=title)


@app.tool
async def count(ctx: Context, limit: int = 3) -> int:
    await ctx.log("info", "counting")
    await ctx.log("infoo", "typo")  # error: arg-type
    await ctx.report_progress(1, limit)
    return limit


@app.resource("notes://{note_id}")
def note(note_id: int) -> Note:
    return Note(id=note_id, title="t")


@app.prompt()
def summarize(note_id: int, style: str = "short") -> str:
    return f"{note_id} {style}"


@summarize.complete("style")
def styles(prefix: str) -> list[str]:
    return ["short"]


reveal_type(add_note("t"))  # reveal: test_user.Note
reveal_type(note(3))  # reveal: test_user.Note
reveal_type(summarize(1))  # reveal: str
reveal_type(styles)  # reveal: def (prefix: str) -> list[str]
add_note("t", priority="urgent")  # error: arg-type
add_note(titel="t")  # error: call-arg
note("3")  # error: arg-type
summarize(note_id="x")  # error: arg-type
'''
MARK = re.compile(r"# (error|reveal): (.+)$")
REPORTED = re.compile(r"^(\w+\.py):(\d+): (error|note): (.*?)(?:  \[([a-z-]+)\])?$")


def test_mypy_strict_sees_each_declared_functions_own_signature(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_CODE)
    config = tmp_path / "mypy.ini"
    config.write_text(
        "[mypy]\nstrict = True\n"
        f"mypy_path = {REPO_ROOT / 'runtime'}:{REPO_ROOT / 'generated'}\n"
        "[mypy-jsonschema.*]\nignore_missing_imports = True\n"
    )
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-error-summary",
         "--cache-dir", str(tmp_path / ".mypy_cache"), "test_user.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    found: set[tuple[int, str, str]] = set()
    for line in ran.stdout.splitlines():
        match = REPORTED.match(line)
        assert match, f"unexpected mypy output: {line}\n{ran.stdout}{ran.stderr}"
        _, number, level, text, code = match.groups()
        if level == "error":
            found.add((int(number), "error", code or "?"))
        elif text.startswith("Revealed type is "):
            found.add((int(number), "reveal", text.removeprefix("Revealed type is ").strip('"')))
    wanted = {
        (number, kind, value.strip())
        for number, line in enumerate(USER_CODE.splitlines(), 1)
        for kind, value in MARK.findall(line)
    }
    assert found == wanted, ran.stdout
