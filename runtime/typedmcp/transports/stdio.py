"""stdio framing: newline-delimited UTF-8 JSON, one message per line.

The server side keeps stdout for protocol messages only: the real stdout descriptor is
duplicated for the protocol writer, and descriptor 1 plus ``sys.stdout`` are pointed at
stderr, so a stray ``print`` (or a C library writing to fd 1) cannot corrupt the stream.
Likewise the real stdin is duplicated for the protocol reader and descriptor 0 is pointed
at the null device, so ``input()`` or a child process cannot swallow protocol messages.
Pipes, sockets and terminals are served by asyncio's pipe transports; a regular file (say
``server < requests.jsonl > replies.jsonl``) is read by a helper thread and written directly.
The client side starts the server process and always cleans it up; the server's stderr is
passed on to the client's as it comes, and its last lines name the cause when the server
goes away (:class:`ServerProcessTransport`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
import stat
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Protocol, SupportsIndex

from ..engine.jsonrpc import ConnectionClosed, MessageTooLarge

logger = logging.getLogger("typedmcp")

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: How much of a spawned server's stderr an error message quotes (all of it is passed on).
STDERR_TAIL_LINES = 10
STDERR_LINE_CHARS = 300
#: How long a client waits, once its server's stdout ended, for the process to exit and its
#: stderr to end, so the error names the exit code and the last words.
EXIT_WAIT = 2.0


class LineWriter(Protocol):
    """The part of :class:`asyncio.StreamWriter` a :class:`LineTransport` uses."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


Consumer = Callable[[bytes], bool]


class LineReader(asyncio.StreamReader):
    """A :class:`asyncio.StreamReader` with a fast path: while its :class:`LineTransport`
    waits for a line with nothing buffered, complete lines that arrive go straight to a
    consumer (the engine), in the I/O callback, instead of waking the reading task first
    (one event-loop pass less per message). A line the consumer declines (returns False),
    and everything after it, is buffered for the reading task as usual, so order holds."""

    consumer: Consumer | None = None
    idle = False  # the transport waits in receive() for a new line (never mid-discard)

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        consumer = self.consumer
        # Only with the reading task parked on an empty buffer: nothing is ahead of `data`.
        if (
            consumer is None
            or not self.idle
            or not isinstance(data, bytes)
            or self._buffer  # type: ignore[attr-defined]
            or self._waiter is None  # type: ignore[attr-defined]
        ):
            super().feed_data(data)
            return
        start = 0
        limit = self._limit  # type: ignore[attr-defined]
        while (end := data.find(b"\n", start)) >= 0 and end - start <= limit:
            line = data[start:end].strip()
            if line:
                try:
                    taken = consumer(line)
                except Exception:
                    logger.exception("could not process an incoming message")
                    taken = True
                if not taken:
                    break
            start = end + 1
        if start < len(data):
            super().feed_data(data[start:] if start else data)


class LineTransport:
    """One JSON-RPC message per line over an asyncio reader/writer pair."""

    #: What the server middleware context calls this transport.
    transport_name = "stdio"
    #: The ``network.transport`` of the OpenTelemetry conventions (``protocol/telemetry``).
    network_transport = "pipe"

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: LineWriter,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.max_message_bytes = max_message_bytes
        self.process: asyncio.subprocess.Process | None = None  # set by spawn
        self.closed_reason: str | None = None  # what the engine tells requests left waiting
        self._held: list[bytes] | None = None  # lines send_now writes at the end of this loop pass
        self._loop: asyncio.AbstractEventLoop | None = None  # (send_now's, found once)

    def set_consumer(self, consumer: Consumer | None) -> bool:
        """Let ``consumer`` take lines as they arrive while :meth:`receive` waits (see
        :class:`LineReader`); False when the reader has no such fast path."""
        if not isinstance(self.reader, LineReader):
            return False
        self.reader.consumer = consumer
        return True

    async def receive(self) -> bytes | None:
        """The next non-blank line without its line ending; None at end of input.

        A line over the size limit is discarded up to its newline and reported by raising
        :class:`MessageTooLarge`, so the engine answers with an error and goes on. A final
        fragment without a newline (the peer stopped mid-message) is dropped.
        """
        reader = self.reader
        fast = isinstance(reader, LineReader)
        while True:
            try:
                if fast:
                    reader.idle = True  # type: ignore[attr-defined]
                try:
                    line = await reader.readuntil(b"\n")
                finally:
                    if fast:
                        reader.idle = False  # type: ignore[attr-defined]
            except asyncio.IncompleteReadError as exc:
                if exc.partial.strip():
                    logger.warning("dropped %d bytes without a final newline", len(exc.partial))
                await self.input_ended()
                return None
            except asyncio.LimitOverrunError as exc:
                await self._discard_line(exc.consumed)
                raise MessageTooLarge(
                    f"message over the limit of {self.max_message_bytes} bytes"
                ) from None
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
        """Write one line (one ``write`` call: lines of concurrent senders never interleave),
        then wait while the writer's buffer is over its limit."""
        if self._held is not None:
            self._write_held()  # (lines held by send_now go first)
        self.writer.write(data + b"\n")
        try:
            await self.writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            await self.output_lost()
            raise

    def send_now(self, data: bytes) -> bool:
        """Write one line without waiting, when nothing is queued ahead of it in the
        writer; False, and nothing written, otherwise: then :meth:`send` it. The lines sent
        so in one event-loop pass go out in one write at its end (a burst of answers is
        one system call, and one read for the peer), ahead of anything sent after them."""
        held = self._held
        if held is not None:
            held.append(data)
            return True
        transport = getattr(self.writer, "transport", None)
        if transport is None or transport.is_closing() or transport.get_write_buffer_size():
            return False
        self._held = [data]
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        loop.call_soon(self._write_held)
        return True

    def _write_held(self) -> None:
        held, self._held = self._held, None
        if held:
            held.append(b"")
            self.writer.write(b"\n".join(held))

    async def input_ended(self) -> None:
        """Called once the input has ended, before :meth:`receive` says so."""

    async def output_lost(self) -> None:
        """Called when a write finds the peer gone, before the error is raised (an override
        may raise a clearer one)."""

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._held is not None:
                self._write_held()
            self.writer.close()


async def server_transport(max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> LineTransport:
    """Transport over this process's stdin/stdout, both protected (see module doc)."""
    sys.stdout.flush()
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    protocol_in = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    loop = asyncio.get_running_loop()
    reader = LineReader(limit=max_message_bytes, loop=loop)
    if _pipe_like(protocol_in):
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(protocol_in, "rb", buffering=0),
        )
    else:
        _read_in_thread(protocol_in, reader, loop)
    writer: LineWriter
    if _pipe_like(protocol_out):
        write_transport, write_protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop),
            os.fdopen(protocol_out, "wb", buffering=0),
        )
        # drain() waits until the pipe took every byte, so nothing sent is lost at exit
        write_transport.set_write_buffer_limits(high=0)
        writer = asyncio.StreamWriter(write_transport, write_protocol, reader, loop)
    else:
        writer = _FileWriter(protocol_out)
    return LineTransport(reader, writer, max_message_bytes)


def _pipe_like(fd: int) -> bool:
    """Whether asyncio's pipe transports take ``fd`` (they refuse regular files)."""
    mode = os.fstat(fd).st_mode
    # A character device is pollable only if it is a terminal: Linux refuses to poll
    # /dev/null, so `server < /dev/null` would never see its end of input.
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


def _read_in_thread(fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    """Feed ``reader`` from a file that the event loop cannot watch."""

    def pump() -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except OSError as exc:
            logger.warning("stopped reading stdin: %s", exc)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="mcp-stdin", daemon=True).start()


class _FileWriter:
    """Writes straight to a file descriptor that is not a pipe (writes do not block long)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        os.close(self.fd)


@contextlib.asynccontextmanager
async def spawn(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_timeout: float = 2.0,
) -> AsyncIterator[ServerProcessTransport]:
    """Start a stdio server process; on exit close its stdin, wait, then terminate/kill it.

    Its stdin and stdout are plain pipes served by asyncio's pipe transports (not the
    subprocess transport, whose protocol adds an event-loop pass to every read).
    """
    loop = asyncio.get_running_loop()
    child_in, to_child = os.pipe()
    from_child, child_out = os.pipe()
    err_from_child, child_err = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=child_in, stdout=child_out, stderr=child_err, env=env, cwd=cwd
        )
    except BaseException as error:
        os.close(to_child)
        os.close(from_child)
        os.close(err_from_child)
        if isinstance(error, (FileNotFoundError, PermissionError)):
            raise type(error)(
                error.errno,
                f"cannot start the server {shlex.join(command)!r}: {error.strerror} "
                f"({command[0]!r}; check the command, PATH and cwd)",
            ) from None
        raise
    finally:  # the child has its own copies now
        os.close(child_in)
        os.close(child_out)
        os.close(child_err)
    stderr = StderrTail(err_from_child, loop)
    read_transport: asyncio.ReadTransport | None = None
    write_transport: asyncio.WriteTransport | None = None
    try:
        reader = LineReader(limit=max_message_bytes, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(from_child, "rb", buffering=0),
        )
        write_transport, write_protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop),
            os.fdopen(to_child, "wb", buffering=0),
        )
        writer = asyncio.StreamWriter(write_transport, write_protocol, reader, loop)
        transport = ServerProcessTransport(reader, writer, max_message_bytes)
        transport.process = process
        transport.command = tuple(command)
        transport.stderr = stderr
        transport.closed_reason = f"the server {shlex.join(command)!r} closed its stdout"
        yield transport
    finally:
        try:
            await _stop(process, shutdown_timeout, write_transport)
        finally:
            if read_transport is not None:
                read_transport.close()
            else:
                with contextlib.suppress(OSError):
                    os.close(from_child)
            if write_transport is None:
                with contextlib.suppress(OSError):
                    os.close(to_child)


class StderrTail:
    """A spawned server's stderr: passed on to ours as it comes (as if inherited), and its
    last lines kept for error messages. A thread reads it, so a slow stderr of ours stalls
    neither the event loop nor, any more than before, the server."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self._lines: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._partial = b""
        self._lock = threading.Lock()
        self._loop = loop
        self.ended = asyncio.Event()
        threading.Thread(target=self._pump, args=(fd,), name="mcp-server-stderr", daemon=True).start()

    def _pump(self, fd: int) -> None:
        passing_on = True
        try:
            while chunk := os.read(fd, 1 << 16):
                if passing_on:
                    passing_on = _write_all(2, chunk)
                self._keep(chunk)
        except OSError:
            pass
        finally:
            os.close(fd)
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self._loop.call_soon_threadsafe(self.ended.set)

    def _keep(self, chunk: bytes) -> None:
        *complete, partial = (self._partial + chunk).split(b"\n")
        with self._lock:
            for line in complete[-STDERR_TAIL_LINES * 2 :]:
                if line.strip(b" \t\r^~"):  # not blank, not a traceback's ^^^ marks
                    self._lines.append(_printable(line))
            self._partial = partial[-STDERR_LINE_CHARS * 4 :]

    def last_lines(self) -> list[str]:
        """Its last lines (a final one without a newline included)."""
        with self._lock:
            lines = [*self._lines, _printable(self._partial)]
        return [line for line in lines if line.strip()][-STDERR_TAIL_LINES:]


def _write_all(fd: int, data: bytes) -> bool:
    """Write all of ``data`` to ``fd``; False if it cannot be written to (closed)."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        return False
    return True


def _printable(line: bytes) -> str:
    text = line.decode("utf-8", "replace").rstrip()
    return text if len(text) <= STDERR_LINE_CHARS else text[: STDERR_LINE_CHARS - 3] + "..."


class ServerProcessTransport(LineTransport):
    """The client's end of a spawned stdio server. When the server goes away, the reason the
    engine gives waiting requests (:attr:`closed_reason`), and the error of a send that finds
    it gone, name the command, how the process ended and the last lines of its stderr."""

    command: tuple[str, ...] = ()
    stderr: StderrTail | None = None

    async def input_ended(self) -> None:
        await self.settle()

    async def output_lost(self) -> None:
        raise ConnectionClosed(await self.settle()) from None

    async def settle(self, when: str = "") -> str:
        """Wait a little for the process to exit and its stderr to end; the story of its end
        (``when``, e.g. " before the connection was set up", is put after how it ended),
        which is also the :attr:`closed_reason` from now on."""
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), EXIT_WAIT)
        if self.stderr is not None and process is not None and process.returncode is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.stderr.ended.wait(), EXIT_WAIT)
        self.closed_reason = self.story(when)
        return self.closed_reason

    def story(self, when: str = "") -> str:
        """How the server ended, and its last words."""
        code = self.process.returncode if self.process is not None else None
        if code is None:
            how = "closed its stdout"
        elif code < 0:
            how = f"was killed by signal {-code}{_signal_name(-code)}"
        else:
            how = f"exited with code {code}"
        text = f"the server {shlex.join(self.command)!r} {how}{when}"
        lines = self.stderr.last_lines() if self.stderr is not None else []
        if not lines:
            return text + " (and wrote nothing to stderr)"
        return text + "; the last lines of its stderr:\n" + "\n".join("    " + line for line in lines)


def _signal_name(number: int) -> str:
    try:
        return f" ({signal.Signals(number).name})"
    except ValueError:
        return ""


async def _stop(
    process: asyncio.subprocess.Process,
    timeout: float,
    stdin: asyncio.WriteTransport | None,
) -> None:
    """Close stdin and wait; then terminate and wait; then kill. If this is cancelled
    midway the process is killed at once, so it never outlives ``spawn``."""
    try:
        if stdin is not None:
            with contextlib.suppress(Exception):
                stdin.close()
        for stop in (None, process.terminate, process.kill):
            if stop is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    stop()
            try:
                await asyncio.wait_for(process.wait(), timeout)
                return
            except asyncio.TimeoutError:
                continue
    except BaseException:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        raise
