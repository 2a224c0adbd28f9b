#!/usr/bin/env python3
"""Run a command without pip's "WARNING: Location ... is ignored" lines; keep its status.

    python3 .ci/quiet.py .venv/bin/python -m pip install -q -e '.[dev]'

The command's stdout and stderr come out merged on stdout, line by line as they arrive,
minus those warnings (pip prints one per index location of this machine's configuration
that does not exist). The exit status is the command's own, so a failed install fails CI
even when every line it printed was filtered (127 if the program does not exist).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence


def is_noise(line: str) -> bool:
    """Whether ``line`` is pip's harmless warning about a missing index location."""
    return line.startswith("WARNING: Location ") and " is ignored" in line


def run_quietly(
    argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> int:
    """Run ``argv`` (in ``cwd``, with ``env``: default this process's), print its output
    without pip's location warnings, and return its exit status."""
    try:
        process = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace",
        )
    except OSError as error:
        print(f"cannot run {argv[0]}: {error.strerror}", file=sys.stderr)
        return 127
    assert process.stdout is not None
    with process.stdout:
        for line in process.stdout:
            if not is_noise(line):
                sys.stdout.write(line)
                sys.stdout.flush()
    return process.wait()


def main(argv: Sequence[str]) -> int:
    if not argv:
        print("usage: quiet.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    return run_quietly(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
