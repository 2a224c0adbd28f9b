"""Server CPU per new handshake-era session, by how many sessions are already live (issue 22).

Run from the repository root::

    .venv/bin/python benchmarks/bench_sessions.py [--quick] [--repeats N] [--json PATH]

No network: ``initialize`` requests are handed to the ASGI app (``http_app`` serving the
``echo`` server of ``peers/ours_server.py``) in this process, one after another, each from
its own client address (so the per-client cap never applies), and ``time.process_time()``
brackets each window of creations: the figure is CPU microseconds per new session while
0-1,000, 4,000-5,000 and 9,000-10,000 sessions are live. Creating a session must cost the
same however many are live: the last column is the last window over the first (target <= 1.3).

Two tables: **room** (``max_sessions`` above the last window: nothing is evicted) and **at
the cap** (an app holding ``max_sessions`` sessions, 1,000, 5,000 or 10,000, then 1,000 more
initializes: each evicts the least recently used idle session). Each repeat starts a fresh
app; the tables show medians. ``--quick`` (a CI smoke run, a few seconds) uses windows 0-200
and 1,800-2,000 (caps 200 and 2,000) and checks the target loosely (<= 2.0: the smoke run is
short and noisy). The cyclic GC is paused in the timed windows (``--keep-gc`` leaves it on:
a full collection then lands in whichever window crosses its threshold, adding a few hundred
microseconds per session there at 10,000 live sessions). Targets are reported, never turned into the exit status; a wrong answer
(an initialize not answered 200, a session count off) stops the run.
"""

from __future__ import annotations

import argparse
import contextlib
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy (explicit_package_bases) knows this file as benchmarks.bench_sessions
    from benchmarks import _common as common
else:  # run as a script, benchmarks/ is sys.path[0]
    import _common as common

from typedmcp.serving import http_app

PEER = common.load_peer(common.OURS_SERVER)  # the echo server: the same handlers as the other benches

INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "bench-sessions", "version": "1"}},
}).encode()
HEADERS = [
    (b"host", b"127.0.0.1:8000"),
    (b"content-type", b"application/json"),
    (b"accept", b"application/json, text/event-stream"),
    (b"content-length", str(len(INITIALIZE)).encode()),
]
FULL_WINDOWS = ((0, 1_000), (4_000, 5_000), (9_000, 10_000))
QUICK_WINDOWS = ((0, 200), (1_800, 2_000))
TARGET_FLAT = 1.3
QUICK_TARGET_FLAT = 2.0


def _address(index: int) -> str:
    """A client address of its own for the ``index``-th session (10.x.y.z)."""
    return f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}"


async def _initialize(app: Any, index: int) -> None:
    """One ``initialize`` POST handed to the app; fails loudly unless a session was made."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
        "headers": HEADERS, "client": (_address(index), 40000), "server": ("127.0.0.1", 8000),
    }
    sent = False
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": INITIALIZE, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    if status != [200]:
        raise SystemExit(f"initialize #{index} was answered {status}, not 200")


#: True: the cyclic GC is paused in the timed windows (a full collection is amortised over
#: the objects it finds, but lands in whichever window crosses its threshold); --keep-gc
KEEP_GC = False


@contextlib.contextmanager
def _timed(figures: list[float], count: int) -> Iterator[None]:
    """Append the CPU microseconds per item of the block (``count`` items) to ``figures``."""
    paused = not KEEP_GC and gc.isenabled()
    if paused:
        gc.collect()
        gc.disable()
    began = time.process_time()
    try:
        yield
    finally:
        figures.append((time.process_time() - began) / count * 1e6)
        if paused:
            gc.enable()


def _app(max_sessions: int, per_client: int) -> Any:
    return http_app(PEER.Echo(), server_info={"name": PEER.NAME, "version": PEER.VERSION}, freeze_gc=False,
                    max_sessions=max_sessions, max_sessions_per_client=per_client)


async def _capped_run(windows: Sequence[tuple[int, int]]) -> list[float]:
    """At the cap: for each window a fresh app holding ``end`` sessions, the most it allows,
    then ``end - start`` more initializes, each of which evicts one."""
    figures: list[float] = []
    for start, end in windows:
        app = _app(end, end + 1)
        for index in range(end):
            await _initialize(app, index)
        with _timed(figures, end - start):
            for index in range(end, 2 * end - start):
                await _initialize(app, index)
        if len(app.sessions) != end:
            raise SystemExit(f"{len(app.sessions)} sessions live at a cap of {end}")
    return figures


async def _room_run(windows: Sequence[tuple[int, int]]) -> list[float]:
    """With room: one app, the windows measured as the sessions accumulate."""
    last = windows[-1][1]
    app = _app(last + 1, last + 1)
    figures: list[float] = []
    created = 0
    for start, end in windows:
        while created < start:
            await _initialize(app, created)
            created += 1
        with _timed(figures, end - start):
            while created < end:
                await _initialize(app, created)
                created += 1
    live = len(app.sessions)
    if live != last:
        raise SystemExit(f"{live} sessions live after {last} initializes")
    return figures


def _table(
    title: str, labels: Sequence[str], runs: list[list[float]], target: float
) -> dict[str, Any]:
    medians = [statistics.median(run[i] for run in runs) for i in range(len(labels))]
    flat = medians[-1] / medians[0]
    print(f"\n{title}")
    print(f"  {'live sessions':>15}  {'CPU us / new session':>21}")
    for label, median in zip(labels, medians, strict=True):
        print(f"  {label:>15}  {median:21.0f}")
    met = flat <= target
    print(f"  last/first window: {flat:.2f} (target <= {target}: {'met' if met else 'NOT met'})")
    return {
        "live_sessions": list(labels), "median_us": medians,
        "runs_us": runs, "last_over_first": flat, "target": target, "met": met,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a CI smoke run (a few seconds)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per table (default 3; quick 1)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    parser.add_argument("--keep-gc", action="store_true",
                        help="leave the cyclic GC on in the timed windows (default: paused)")
    args = parser.parse_args(argv)
    global KEEP_GC
    KEEP_GC = args.keep_gc
    windows = QUICK_WINDOWS if args.quick else FULL_WINDOWS
    repeats = args.repeats or (1 if args.quick else 3)
    target = QUICK_TARGET_FLAT if args.quick else TARGET_FLAT
    print(f"server CPU per new session (in-process ASGI initialize, {repeats} run(s) per table, "
          f"load average {os.getloadavg()[0]:.2f}{', quick' if args.quick else ''}; "
          f"cyclic GC {'on' if KEEP_GC else 'paused'} in the timed windows)")
    room = [asyncio.run(_room_run(windows)) for _ in range(repeats)]
    capped = [asyncio.run(_capped_run(windows)) for _ in range(repeats)]
    report = {
        "quick": args.quick, "keep_gc": KEEP_GC,
        "room": _table("room (nothing evicted)", [f"{a:,}-{b:,}" for a, b in windows], room, target),
        "at_cap": _table("at the cap (each new session evicts the least recently used idle one)",
                         [f"{b:,} (cap)" for _, b in windows], capped, target),
    }
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
