"""The floor of any stdio gateway: ``python line_relay.py [--uvloop] COMMAND...`` spawns
COMMAND and copies lines both ways (this process's stdin to the child's, the child's
stdout to this process's), parsing nothing; on asyncio's own event loop, or on uvloop with
``--uvloop``. ``bench_host.py`` times a call through it beside the gateway: the cost of the
extra process and pipe hop alone, in Python (``socat`` is the same floor in C)."""

from __future__ import annotations

import asyncio
import sys


async def relay(command: list[str]) -> None:
    """Copy lines to and from ``command`` until either side's input ends."""
    loop = asyncio.get_running_loop()
    child = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out, _protocol = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout)

    async def up() -> None:
        assert child.stdin is not None
        while line := await reader.readline():
            child.stdin.write(line)
        child.stdin.close()

    async def down() -> None:
        assert child.stdout is not None
        while line := await child.stdout.readline():
            out.write(line)

    await asyncio.gather(up(), down())
    await child.wait()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--uvloop"]:
        import uvloop

        uvloop.run(relay(sys.argv[2:]))
    else:
        asyncio.run(relay(sys.argv[1:]))
