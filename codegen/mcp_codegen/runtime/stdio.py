"""stdio framing: newline-delimited UTF-8 JSON, one message per line.

The server side keeps stdout for protocol messages only: the real stdout descriptor is
duplicated for the protocol writer, and descriptor 1 plus ``sys.stdout`` are pointed at
stderr, so a stray ``print`` (or a C library writing to fd 1) cannot corrupt the stream.
The client side starts the server process and always cleans it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Sequence

logger = logging.getLogger("mcp_codegen.runtime")

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class LineTransport:
    """One JSON-RPC message per line over an asyncio reader/writer pair."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.max_message_bytes = max_message_bytes

    async def receive(self) -> bytes | None:
        """The next non-blank line without its line ending; None at end of input.

        A line over the size limit is discarded up to its newline and reported as an
        invalid (empty) message, so the engine answers with an error and goes on.
        """
        while True:
            try:
                line = await self.reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial.strip():
                    logger.warning("dropped %d bytes without a final newline", len(exc.partial))
                return None
            except asyncio.LimitOverrunError as exc:
                await self._discard_line(exc.consumed)
                return b"\0oversized"
            stripped = line.strip()
            if stripped:
                return stripped

    async def _discard_line(self, consumed: int) -> None:
        logger.warning("discarding a message over %d bytes", self.max_message_bytes)
        await self.reader.readexactly(consumed)
        while True:
            try:
                await self.reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self.reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    async def send(self, data: bytes) -> None:
        self.writer.write(data + b"\n")
        await self.writer.drain()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


async def server_transport(max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> LineTransport:
    """Transport over this process's stdin/stdout, with stdout protected (see module doc)."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=max_message_bytes, loop=loop)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(0, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop=loop),
        os.fdopen(protocol_fd, "wb", buffering=0),
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, reader, loop)
    return LineTransport(reader, writer, max_message_bytes)


@contextlib.asynccontextmanager
async def spawn(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_timeout: float = 2.0,
) -> AsyncIterator[LineTransport]:
    """Start a stdio server process; on exit close its stdin, wait, then terminate/kill it."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        limit=max_message_bytes,
    )
    assert process.stdin is not None and process.stdout is not None
    transport = LineTransport(process.stdout, process.stdin, max_message_bytes)
    try:
        yield transport
    finally:
        await _stop(process, shutdown_timeout)


async def _stop(process: asyncio.subprocess.Process, timeout: float) -> None:
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    for stop in (None, process.terminate, process.kill):
        if stop is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                stop()
        try:
            await asyncio.wait_for(process.wait(), timeout)
            return
        except asyncio.TimeoutError:
            continue
