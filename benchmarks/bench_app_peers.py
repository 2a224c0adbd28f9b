"""Server cost of one typed tool over stdio: ``typedmcp.app.McpApp`` against the official
SDK's ``MCPServer`` (mcp 2.3.0), the same ``async def echo(text: str) -> str`` on both
(issue 18, requirement 12, second part; FastMCP is not installed here, Streamable HTTP is
not measured yet).

Run from the repository root::

    .venv/bin/python benchmarks/bench_app_peers.py [--calls N] [--rounds N]

The client is the same raw JSON-RPC writer for both, so the difference is the servers': it
spawns the server, sends ``initialize`` (2025-11-25) and ``notifications/initialized``,
then ``--calls`` sequential ``tools/call`` requests, each written when the previous answer
has been read; calls per second, rounds alternating between the servers, medians printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

PEERS = Path(__file__).resolve().parent / "peers"
SERVERS = {"McpApp": PEERS / "app_echo_server.py", "SDK MCPServer": PEERS / "sdk_mcpserver_echo.py"}
INITIALIZE = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


def calls_per_second(script: Path, calls: int) -> float:
    process = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(line(INITIALIZE))
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        if answer.get("id") != 0 or "result" not in answer:
            raise SystemExit(f"{script.name}: initialize failed: {answer}")
        process.stdin.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        requests = [
            line({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": f"hi {n}"}}})
            for n in range(1, calls + 1)
        ]
        start = time.perf_counter()
        for number, request in enumerate(requests, 1):
            process.stdin.write(request)
            process.stdin.flush()
            while True:  # skip notifications (none are expected)
                reply = json.loads(process.stdout.readline())
                if reply.get("id") == number:
                    break
            if "result" not in reply or reply["result"].get("isError"):
                raise SystemExit(f"{script.name}: tools/call failed: {reply}")
        return calls / (time.perf_counter() - start)
    finally:
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    rates: dict[str, list[float]] = {name: [] for name in SERVERS}
    for _ in range(options.rounds):
        for name, script in SERVERS.items():
            rates[name].append(calls_per_second(script, options.calls))
    ours = statistics.median(rates["McpApp"])
    print(f"{'server (stdio)':<16} {'calls/s':>10} {'McpApp / it':>12}")
    for name in SERVERS:
        rate = statistics.median(rates[name])
        print(f"{name:<16} {rate:>10,.0f} {ours / rate:>11.2f}x")


if __name__ == "__main__":
    main()
