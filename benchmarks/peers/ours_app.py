"""``uvicorn ours_app:app --workers N``: the benchmark's echo server as an importable ASGI app,
serving both eras (the multi-worker benchmark sends stateless 2026-07-28 requests)."""

from __future__ import annotations

from ours_server import NAME, VERSION, Echo

from typedmcp.serving import http_app

app = http_app(Echo(), server_info={"name": NAME, "version": VERSION})
