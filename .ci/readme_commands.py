#!/usr/bin/env python3
"""Run the commands of the README's first ```bash block, exactly as written.

    python3 .ci/readme_commands.py            # run them, from the README's folder
    python3 .ci/readme_commands.py --list     # print them, one per line

CI runs the setup and test commands a contributor copies from the README, not copies of
them, so the README cannot drift from what works. Each non-blank line of the block that is
not a comment is one command (a line ending in a backslash continues on the next); each
runs in ``bash -e -o pipefail`` in the README's folder, after the previous one succeeded,
with pip's "WARNING: Location ... is ignored" lines left out of its output. The first
failing command ends the run with its exit status; a README without a ```bash block, or
with an empty or unclosed one, is an error too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quiet import run_quietly

DEFAULT_README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = "```"


class ReadmeError(Exception):
    """The README has no usable ```bash block."""


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", type=Path, default=DEFAULT_README, help="default: %(default)s")
    parser.add_argument("--list", action="store_true", help="print the commands, run nothing")
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
    for command in commands:
        print(f"$ {command}", flush=True)
        status = run_quietly(["bash", "-e", "-o", "pipefail", "-c", command], cwd=str(readme.parent))
        if status != 0:
            print(f"readme_commands: README command failed (exit {status}): {command}", file=sys.stderr)
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
