"""A stdio server with the classic mistake: it prints a line to stdout before serving
(``legacy_server.py`` after one ``print``)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

print("Starting my server...")  # belongs on stderr: stdout carries JSON-RPC only
sys.stdout.flush()
runpy.run_path(str(Path(__file__).with_name("legacy_server.py")), run_name="__main__")
