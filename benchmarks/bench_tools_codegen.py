"""Benchmark ``mcp-codegen tools``: generation time for 1, 50 and 500 tools.

Run from the repository root::

    .venv/bin/python benchmarks/bench_tools_codegen.py [--sizes 1 50 500] [--repeats 3]

Each size is a synthetic snapshot cycling through five realistic tool shapes (scalars and
an enum; ``$defs``/``$ref`` with an output schema; anyOf/oneOf with keyword property names;
a map and an array of objects; no arguments). One measurement is the wall time of
``mcp-codegen tools --manifest ... --out <fresh tmpdir>`` as a subprocess (interpreter start,
imports, generation, black, atomic write), median of ``--repeats``. Target: 500 tools < 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET_500_S = 10.0


def shapes(index: int) -> dict[str, Any]:
    """Tool number ``index`` of a synthetic catalogue (five shapes in turn)."""
    name = f"tool-{index:04d}"
    kind = index % 5
    if kind == 0:
        return {"name": name, "description": "Scalars and an enum.", "inputSchema": {
            "type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"},
                                             "mode": {"enum": ["fast", "exact"]}},
            "required": ["query"]}}
    if kind == 1:
        return {"name": name, "description": "Refs and an output schema.", "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": {"at": {"$ref": "#/$defs/Point"}}, "required": ["at"],
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                                "required": ["x", "y"]}}},
            "outputSchema": {"type": "object", "properties": {"distance": {"type": "number"},
                                                              "unit": {"type": "string"}}, "required": ["distance"]}}
    if kind == 2:
        return {"name": name, "description": "Unions and keywords.", "inputSchema": {
            "type": "object", "properties": {
                "from": {"type": "string"}, "type": {"anyOf": [{"const": "a"}, {"const": "b"}]},
                "value": {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}},
            "required": ["from"]}}
    if kind == 3:
        return {"name": name, "description": "Maps and arrays of objects.", "inputSchema": {
            "type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "integer"}, "note": {"type": "string"}}, "required": ["id"]}}}}}
    return {"name": name, "description": "No arguments.", "inputSchema": {"type": "object"}}


def measure(size: int, repeats: int) -> float:
    """Median wall time of the CLI for a snapshot of ``size`` tools."""
    times = []
    with tempfile.TemporaryDirectory() as folder:
        manifest = Path(folder) / "tools.json"
        manifest.write_text(json.dumps({"protocolVersion": "2025-11-25", "serverInfo": {"name": "bench", "version": "1"},
                                        "tools": [shapes(i) for i in range(size)]}))
        for repeat in range(repeats):
            out = Path(folder) / f"out{repeat}" / "bench_tools"
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "typedmcp_codegen", "tools", "--out", str(out),
                            "--manifest", str(manifest)], check=True, capture_output=True,
                           env=dict(os.environ))
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 50, 500])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    print("| tools | wall time (s), median |")
    print("| ---: | ---: |")
    results = {}
    for size in options.sizes:
        results[size] = measure(size, options.repeats)
        print(f"| {size} | {results[size]:.2f} |", flush=True)
    if 500 in results:
        verdict = "met" if results[500] < TARGET_500_S else "NOT met"
        print(f"\ntarget 500 tools < {TARGET_500_S:.0f} s: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
