"""Ignores stdin EOF (and, with --ignore-term, SIGTERM); prints its pid once ready."""

import signal
import sys
import time

if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(
    f'{{"jsonrpc":"2.0","method":"ready","params":{{"pid":{__import__("os").getpid()}}}}}',
    flush=True,
)
time.sleep(60)
