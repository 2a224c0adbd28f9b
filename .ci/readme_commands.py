#!/usr/bin/env python3
"""Run the commands of the README's first ```bash block, exactly as written, in a fresh clone.

    python3 .ci/readme_commands.py              # run them in a fresh clone of HEAD
    python3 .ci/readme_commands.py --in-place   # run them in the README's own folder
    python3 .ci/readme_commands.py --list       # print them, one per line

CI runs the setup and test commands a contributor copies from the README, not copies of
them, so the README cannot drift from what works. By default they run where a new user runs
them: in a fresh ``git clone`` of the README's repository at its HEAD commit (committed work
only: CI runs from a clean clone), alone in an empty temporary folder, so no folder beside
the repository can help, and without ``MCP_CODEGEN_SCHEMA_DIR`` (the repository must not
need one). The clone is removed after a successful run and kept, named, after a failure.

Each non-blank line of the block that is not a comment is one command (a line ending in a
backslash continues on the next); each runs in ``bash -e -o pipefail`` in the README's folder
(of the clone), after the previous one succeeded, with pip's "WARNING: Location ... is
ignored" lines left out of its output. The first failing command ends the run with its exit
status; a README without a ```bash block, or with an empty or unclosed one, is an error too,
and so is a README outside a git repository (unless ``--in-place``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from quiet import run_quietly

DEFAULT_README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = "```"
#: Left out of the commands' environment: the repository needs no schema folder beside it.
UNSET = ("MCP_CODEGEN_SCHEMA_DIR",)


class ReadmeError(Exception):
    """The README has no usable ```bash block, or no repository to clone."""


def bash_commands(readme: Path) -> list[str]:
    """The commands of the first ```bash block of ``readme``, in order."""
    lines = readme.read_text("utf-8").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == FENCE + "bash")
    except StopIteration:
        raise ReadmeError(
            f"{readme}: no ```bash block; CI runs the setup and test commands of the "
            "README's first one"
        ) from None
    try:
        end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == FENCE)
    except StopIteration:
        raise ReadmeError(f"{readme}:{start + 1}: the ```bash block is not closed") from None
    commands: list[str] = []
    pending = ""
    for line in lines[start + 1 : end]:
        text = line.rstrip()
        if not pending and (not text.strip() or text.lstrip().startswith("#")):
            continue
        if text.endswith("\\"):
            pending += text[:-1]
            continue
        commands.append(pending + text)
        pending = ""
    if pending:
        commands.append(pending)
    if not commands:
        raise ReadmeError(f"{readme}:{start + 1}: the ```bash block holds no command")
    return commands


def git(*args: str, cwd: Path) -> str:
    """The output of one git command (stripped); ReadmeError when it fails."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
        )
    except OSError as error:
        raise ReadmeError(f"cannot run git: {error.strerror}") from None
    if done.returncode != 0:
        raise ReadmeError(f"git {' '.join(args)} (in {cwd}) failed: {done.stderr.strip()}")
    return done.stdout.strip()


def fresh_clone(readme: Path, into: Path) -> tuple[Path, str]:
    """Clone the repository holding ``readme`` at its HEAD commit into the empty folder
    ``into``; return the clone's copy of the README and the commit."""
    try:
        top = Path(git("rev-parse", "--show-toplevel", cwd=readme.parent))
        commit = git("rev-parse", "HEAD", cwd=top)
    except ReadmeError as error:
        raise ReadmeError(
            f"{readme} is not in a git repository with a commit ({error}); run with "
            "--in-place to run its commands where it is"
        ) from None
    clone = into / top.name
    git("clone", "--quiet", "--no-checkout", str(top), str(clone), cwd=into)
    git("checkout", "--quiet", "--detach", commit, cwd=clone)
    return clone / readme.resolve().relative_to(top.resolve()), commit


def run_commands(commands: list[str], folder: Path, env: dict[str, str]) -> int:
    """Run each command in ``folder``, in order, until one fails; its status, or 0."""
    for command in commands:
        print(f"$ {command}", flush=True)
        argv = ["bash", "-e", "-o", "pipefail", "-c", command]
        status = run_quietly(argv, cwd=str(folder), env=env)
        if status != 0:
            print(f"readme_commands: README command failed (exit {status}): {command}", file=sys.stderr)
            return status
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", type=Path, default=DEFAULT_README, help="default: %(default)s")
    parser.add_argument("--list", action="store_true", help="print the commands, run nothing")
    parser.add_argument(
        "--in-place", action="store_true",
        help="run them in the README's folder, not in a fresh clone of its repository",
    )
    args = parser.parse_args(argv)
    readme: Path = args.readme.resolve()
    try:
        commands = bash_commands(readme)
    except (ReadmeError, OSError) as error:
        print(f"readme_commands: {error}", file=sys.stderr)
        return 1
    if args.list:
        print("\n".join(commands))
        return 0
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    if args.in_place:
        return run_commands(commands, readme.parent, env)
    scratch = Path(tempfile.mkdtemp(prefix="readme-commands-"))
    try:
        cloned, commit = fresh_clone(readme, scratch)
        # the commands of the commit, which may differ from the working tree's README
        commands = bash_commands(cloned)
    except (ReadmeError, OSError) as error:
        shutil.rmtree(scratch, ignore_errors=True)
        print(f"readme_commands: {error}", file=sys.stderr)
        return 1
    print(f"readme_commands: a fresh clone of {commit[:12]} at {cloned.parent}, alone in {scratch}", flush=True)
    status = run_commands(commands, cloned.parent, env)
    if status == 0:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"readme_commands: the clone is kept for a look: {cloned.parent}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
