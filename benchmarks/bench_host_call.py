"""How long one ``mcp-host call`` takes on a configuration of three servers, one of which
owns the tool and two of which are slow to start (they wait ``--slow`` seconds before
serving, as a server that opens a database or a remote session first would):

* ``mcp-host call --config``: a fresh host per call (before issue 17 it started all three
  servers, so a call took as long as the slowest start; now it starts the owner only);
* ``mcp-host call --url``: through a gateway kept running (``mcp-host serve --http``),
  which starts nothing per call.

    .venv/bin/python benchmarks/bench_host_call.py [--slow 5] [--runs 5] [--json PATH]

Each figure is the median wall time of ``--runs`` runs of the command as a subprocess.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVER = HERE.parent / "tests" / "servers" / "host_server.py"
TOOL = "owner__echo"
ARGUMENTS = '{"text": "hi"}'


def config(slow: float) -> dict[str, Any]:
    def entry(delay: float) -> dict[str, Any]:
        return {"command": sys.executable, "args": [str(SERVER), "--start-delay", str(delay)]}

    return {"mcpServers": {"slow_a": entry(slow), "owner": entry(0), "slow_b": entry(slow)}}


def timed(command: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - began
    if done.returncode != 0 or "hi" not in done.stdout:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(process: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the gateway exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the gateway did not listen")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slow", type=float, default=5.0, help="start-up wait of the two slow servers")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--no-gateway", action="store_true", help="skip call --url (older mcp-host)")
    args = parser.parse_args()
    host = [sys.executable, "-m", "typedmcp.host.cli"]
    figures: dict[str, Any] = {"slow_start_s": args.slow, "runs": args.runs}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mcp.json"
        path.write_text(json.dumps(config(args.slow)))
        local = [timed([*host, "call", "--config", str(path), TOOL, ARGUMENTS]) for _ in range(args.runs)]
        figures["call_config_s"] = statistics.median(local)
        if not args.no_gateway:
            port = free_port()
            gateway = subprocess.Popen([*host, "serve", "--config", str(path), "--http", f"127.0.0.1:{port}"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_listening(gateway, port)
                url = f"http://127.0.0.1:{port}/mcp"
                remote = [timed([*host, "call", "--url", url, TOOL, ARGUMENTS]) for _ in range(args.runs)]
                figures["call_url_s"] = statistics.median(remote)
            finally:
                gateway.terminate()
                gateway.wait(10)
    import typedmcp

    figures["typedmcp"] = os.path.dirname(typedmcp.__file__)
    for key, value in figures.items():
        print(f"{key:16} {value:.2f}" if isinstance(value, float) else f"{key:16} {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
