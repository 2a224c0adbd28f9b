"""Test helpers: a typed client connected to a server object, in memory or over a real
transport, in either era, and stopped when the test is done.

``connected(server, transport=..., revision=...)`` is an async context manager that works
under any test runner (anyio's or pytest-asyncio's plugin, or ``asyncio.run`` in a plain
test); the pytest plugin (:mod:`typedmcp.pytest_plugin`, registered by the runtime's
``pytest11`` entry point) hands it out as the ``mcp_client`` fixture, and parametrizes
``mcp_transport`` and ``mcp_revision`` over :data:`TRANSPORTS` and :data:`REVISIONS`::

    async def test_greet(mcp_client: McpClientFactory, mcp_transport: Transport) -> None:
        async with mcp_client(app, transport=mcp_transport, revision="2025-11-25") as client:
            ...

The transports: ``"memory"`` (:func:`~typedmcp.connect_memory`: JSON-RPC bytes in this
process, every encoding and era rule), ``"direct"`` (:func:`~typedmcp.connect_direct`: no
wire at all, the fastest), ``"stdio"`` (the server in a child process, started as a host
would: ``python -c ... module:name``, found from the object; or pass a command) and
``"http"`` (``http_app(server)`` under uvicorn on a free port of 127.0.0.1, on the test's
own event loop, stopped after it: needs ``typedmcp[http]``).

The revision: ``"auto"`` (the newest both sides speak: 2026-07-28, stateless),
``"2025-11-25"`` (the handshake era: ``initialize``, a session), any other revision the
client's package has beside it, or a generated package.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import socket
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from typing_extensions import Unpack

from .connecting import SessionOptions, connect_direct, connect_http, connect_memory, connect_stdio
from .protocol.negotiation import ProtocolChoice
from .protocol.stubs import ClientHandlersBase, Outbound

if TYPE_CHECKING:
    from mcp_generated.v2026_07_28.client import Client as DefaultClient

C = TypeVar("C", bound=Outbound)

Transport = Literal["memory", "direct", "stdio", "http"]
#: The transports ``mcp_transport`` runs a test over (``"direct"`` is left out: it has no
#: wire, so it proves less than ``"memory"`` for the same cost).
TRANSPORTS: tuple[Transport, ...] = ("memory", "stdio", "http")
#: One revision of each era, which ``mcp_revision`` runs a test in: the handshake era's
#: newest (``initialize``, a session) and the stateless era's.
REVISIONS: tuple[str, ...] = ("2025-11-25", "2026-07-28")
_KNOWN: tuple[str, ...] = ("memory", "direct", "stdio", "http")
#: What runs in the child process of ``transport="stdio"``: import the module (or run the
#: file of a ``__main__`` module, as multiprocessing does) and serve the object over stdio.
_CHILD = (
    "import sys\n"
    "from typedmcp.testing import serve_located\n"
    "serve_located(sys.argv[1], sys.argv[2], sys.argv[3])\n"
)
#: ``run_name`` of a ``__main__`` module's file run again in the child (its
#: ``if __name__ == "__main__":`` block does not run).
CHILD_RUN_NAME = "__typedmcp_test_server__"


class ServerNotFound(LookupError):
    """``transport="stdio"`` could not find where a server object is defined."""


class McpClientFactory:
    """``factory(server, transport=, revision=, client=, ...)``: an async context manager
    yielding a typed client connected to ``server`` (the ``mcp_client`` fixture).

    ``server``: an ``McpApp`` or ``ServerHandlers`` object; with ``transport="stdio"`` also a
    command (a list of strings). ``client``: a generated package's ``Client`` class, which
    types the connection (default: the newest revision's). ``client_handlers``: a subclass of
    that package's ``ClientHandlers`` (sampling, elicitation, roots). ``server_options``:
    the launcher's server options (``instructions=``, ``both_eras=``, ...; JSON values over
    stdio). Any other keyword is a client option (``request_timeout=``, ``log_level=``...).
    """

    @overload
    def __call__(
        self, server: object, *, client: type[C], transport: Transport = ...,
        revision: ProtocolChoice = ..., client_handlers: ClientHandlersBase[C] | None = None,
        server_options: dict[str, Any] | None = None, **options: Unpack[SessionOptions],
    ) -> AbstractAsyncContextManager[C]: ...
    @overload
    def __call__(
        self, server: object, *, client_handlers: ClientHandlersBase[C], transport: Transport = ...,
        revision: ProtocolChoice = ..., server_options: dict[str, Any] | None = None,
        **options: Unpack[SessionOptions],
    ) -> AbstractAsyncContextManager[C]: ...
    @overload
    def __call__(
        self, server: object, *, transport: Transport = ..., revision: Literal["auto"] = ...,
        server_options: dict[str, Any] | None = None, **options: Unpack[SessionOptions],
    ) -> AbstractAsyncContextManager[DefaultClient]: ...
    @overload
    def __call__(
        self, server: object, *, transport: Transport = ..., revision: ModuleType | Sequence[ModuleType] | str,
        server_options: dict[str, Any] | None = None, **options: Unpack[SessionOptions],
    ) -> AbstractAsyncContextManager[Outbound]: ...
    def __call__(self, server: object, **options: Any) -> AbstractAsyncContextManager[Any]:
        return connected(server, **options)


@contextlib.asynccontextmanager
async def connected(
    server: object,
    *,
    transport: Transport = "memory",
    revision: ProtocolChoice = "auto",
    client: type[Outbound] | None = None,
    client_handlers: ClientHandlersBase[Any] | None = None,
    server_options: dict[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[Any]:
    """A typed client connected to ``server`` over ``transport`` in ``revision``; the
    server (a child process, an HTTP server) is stopped when the block ends. See
    :class:`McpClientFactory` for the arguments."""
    if transport not in _KNOWN:
        raise ValueError(
            f"transport must be one of {', '.join(map(repr, _KNOWN))}, not {transport!r}"
        )
    common: dict[str, Any] = {"client": client, "protocol": revision, **options}
    if transport in ("memory", "direct"):
        launch = connect_memory if transport == "memory" else connect_direct
        async with launch(server, client_handlers=client_handlers, server_options=server_options, **common) as made:
            yield made
    elif transport == "stdio":
        command = stdio_command(server, server_options)
        async with connect_stdio(command, handlers=client_handlers, env=child_environment(), **common) as made:
            yield made
    else:
        from .serving import http_app

        async with (
            served_http(http_app(server, **(server_options or {}))) as url,
            connect_http(url, handlers=client_handlers, **common) as made,
        ):
            yield made


# -- stdio: the server in a child process -----------------------------------------------------


def stdio_command(server: object, server_options: dict[str, Any] | None = None) -> list[str]:
    """The command that serves ``server`` over stdio in a child process: ``server`` itself
    when it is one (a list of strings), else this interpreter importing the module that
    defines it at module level (see :func:`locate`)."""
    if isinstance(server, (list, tuple)) and server and all(isinstance(part, str) for part in server):
        if server_options:
            raise ValueError(
                "server_options= cannot reach a server started from a command; pass them "
                "on its command line, or pass the server object instead"
            )
        return list(server)
    where, name = locate(server)
    try:
        encoded = json.dumps(server_options or {})
    except TypeError as error:
        raise ValueError(
            f"server_options= must be JSON values over stdio (the server runs in a child "
            f"process): {error}; set them on the server object instead, or use transport='memory'"
        ) from None
    return [sys.executable, "-c", _CHILD, where, name, encoded]


def locate(server: object) -> tuple[str, str]:
    """(the module that binds ``server`` at module level, or the file of the ``__main__``
    module when no other does; the name it binds). Raises :class:`ServerNotFound` saying
    what to do instead."""
    modules = [module for module in list(sys.modules.values()) if isinstance(module, ModuleType)]
    home = sys.modules.get(type(server).__module__)
    ordered = sorted(modules, key=lambda module: (module.__name__ == "__main__", module is not home))
    for module in ordered:
        name = _binding(module, server)
        if name is None:
            continue
        if module.__name__ == CHILD_RUN_NAME:
            raise ServerNotFound(
                "this is the child process of transport='stdio', which runs the script "
                "again to find the server, and the script connects again: put the code "
                "that connects under `if __name__ == \"__main__\":` (as for multiprocessing)"
            )
        if module.__name__ != "__main__":
            return module.__name__, name
        file = getattr(module, "__file__", None)
        if file:
            return os.path.abspath(file), name
    raise ServerNotFound(
        f"transport='stdio' runs the server in a child process, which imports it: "
        f"{type(server).__name__} object {server!r} is not a module-level name of any "
        "imported module (one made inside a test or a fixture is not); define it at module "
        "level, or pass the command that starts it (mcp_client(['python', 'server.py'], "
        "transport='stdio'))"
    )


def _binding(module: ModuleType, server: object) -> str | None:
    namespace = getattr(module, "__dict__", None)
    if not isinstance(namespace, dict):
        return None
    for name, value in list(namespace.items()):
        if value is server and isinstance(name, str) and not name.startswith("__"):
            return name
    return None


def child_environment() -> dict[str, str]:
    """This process's environment, with its ``sys.path`` as ``PYTHONPATH``: the child
    imports the test's modules as pytest imported them (rootdir and conftest folders)."""
    path = [entry or os.getcwd() for entry in sys.path]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def serve_located(where: str, name: str, server_options: str) -> None:
    """The child's side of :func:`stdio_command`: find ``name`` in ``where`` (a module
    name, or the file of a ``__main__`` module) and serve it over stdio."""
    from .serving import run_stdio

    if os.path.isabs(where):
        import runpy

        server = runpy.run_path(where, run_name=CHILD_RUN_NAME)[name]
    else:
        server = getattr(importlib.import_module(where), name)
    run_stdio(server, **json.loads(server_options))


# -- http: uvicorn on a free port of 127.0.0.1 ------------------------------------------------


@contextlib.asynccontextmanager
async def served_http(asgi_app: Any, *, timeout: float = 30.0) -> AsyncIterator[str]:
    """``asgi_app`` served by uvicorn on this event loop, on a free port of 127.0.0.1: its
    ``/mcp`` URL; uvicorn stops when the block ends."""
    import asyncio

    try:
        import uvicorn
    except ImportError:
        raise ImportError(
            "transport='http' serves the app with uvicorn: pip install 'typedmcp[http]'"
        ) from None

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # the test runner owns the signals
            yield

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = Server(uvicorn.Config(asgi_app, log_level="warning", timeout_graceful_shutdown=1))
    listening = asyncio.Event()
    startup = server.startup

    async def started(sockets: Any = None) -> None:
        await startup(sockets=sockets)
        listening.set()

    server.startup = started  # type: ignore[method-assign]
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    waiting = asyncio.ensure_future(listening.wait())
    try:
        await asyncio.wait({serving, waiting}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if not listening.is_set():
            if serving.done() and serving.exception() is not None:
                raise RuntimeError(f"uvicorn did not start: {serving.exception()!r}")
            raise RuntimeError(f"uvicorn did not start listening within {timeout} s")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        waiting.cancel()
        server.should_exit = True
        try:
            await serving
        except asyncio.CancelledError:
            pass
        except Exception:
            if listening.is_set():  # (a failed start is reported above)
                raise
        finally:
            sock.close()
