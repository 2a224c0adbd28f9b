"""``app_echo_server.py``'s ``http_app`` under granian (one worker, HTTP/1.1) instead of
uvicorn: the alternative ASGI server ``bench_concurrency.py --granian`` measures.

``python app_echo_granian.py`` binds a free port on 127.0.0.1 and prints ``PORT <n>`` before
granian starts (granian has no started hook; the caller waits until the port accepts).
``BENCH_UVICORN_LOOP`` picks granian's loop too (``asyncio`` or ``uvloop``).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from app_echo_server import app  # beside this script

from typedmcp import http_app

per_client = int(os.environ.get("BENCH_MAX_SESSIONS_PER_CLIENT", "100"))
asgi = http_app(app, max_sessions_per_client=per_client)


def main() -> None:
    from granian import Granian
    from granian.constants import HTTPModes, Interfaces, Loops

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    print(f"PORT {port}", flush=True)
    loop = Loops.uvloop if os.environ.get("BENCH_UVICORN_LOOP") == "uvloop" else Loops.asyncio
    Granian(
        "app_echo_granian:asgi", address="127.0.0.1", port=port, interface=Interfaces.ASGI,
        workers=1, http=HTTPModes.http1, loop=loop, log_level="warning",  # type: ignore[arg-type]
        working_dir=Path(__file__).resolve().parent,
    ).serve()


if __name__ == "__main__":
    main()
