"""Start another stdio server script after a delay (a server slow to start: it reads nothing
from stdin until then), for ``tests/test_slow_start.py``.

    python tests/servers/slow_start.py SECONDS SCRIPT [ARGS...]

``SCRIPT`` runs as ``__main__`` with ``ARGS`` as its arguments and its own folder first on
``sys.path`` (as if started directly).
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        sys.exit(f"usage: {argv[0]} SECONDS SCRIPT [ARGS...]")
    delay, script = float(argv[1]), argv[2]
    time.sleep(delay)  # the point of this server: it is slow to start
    sys.argv = [script, *argv[3:]]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv)
