"""A stdio "server" that never answers: it appends each line it reads to the file named by
its argument, until stdin ends (``tests/test_slow_start.py`` reads what the client sent).

    python tests/servers/silent_server.py RECORD_PATH
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit(f"usage: {argv[0]} RECORD_PATH")
    with open(argv[1], "a", encoding="utf-8") as record:
        for line in sys.stdin:
            record.write(line)
            record.flush()


if __name__ == "__main__":
    main(sys.argv)
