"""Shared fixtures: where the official schemas are, and packages generated on demand."""

from __future__ import annotations

import asyncio
import gc
import importlib
import itertools
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from typedmcp_codegen.generate import GeneratedPackage, generate_package
from typedmcp_codegen.load import SchemaSource, load_schema
from typedmcp_codegen.output import write_tree
from typedmcp_codegen.pins import load_pins

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RELEASED = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
_counter = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    """Resolve a relative ``MCP_CODEGEN_SCHEMA_DIR`` (another copy of the official schemas)
    once, against the folder pytest was started from: tests change directory and start
    programs elsewhere, which would read it against their own folder."""
    configured = os.environ.get("MCP_CODEGEN_SCHEMA_DIR")
    if configured and not os.path.isabs(configured):
        resolved = (config.invocation_params.dir / configured).resolve()
        os.environ["MCP_CODEGEN_SCHEMA_DIR"] = str(resolved)


def official_spec_dir() -> Path:
    """The official schemas and test vectors (``<revision>/schema.json``, ``<revision>/examples/``,
    ``draft/``): ``$MCP_CODEGEN_SCHEMA_DIR`` when set, else the repository's own ``schema/``,
    where they are vendored (``schema/SHA256SUMS`` pins them)."""
    configured = os.environ.get("MCP_CODEGEN_SCHEMA_DIR")
    return Path(configured) if configured else REPO_ROOT / "schema"


@pytest.fixture(scope="session")
def spec_dir() -> Path:
    path = official_spec_dir()
    if not (path / "2025-06-18" / "schema.json").is_file():
        pytest.fail(
            f"official schemas not found at {path} (no 2025-06-18/schema.json); unset "
            "MCP_CODEGEN_SCHEMA_DIR to use the repository's schema/, or point it at a folder "
            "laid out like it"
        )
    return path


@pytest.fixture(scope="session")
def offline_source(spec_dir: Path) -> SchemaSource:
    """Schemas from the official folder only: no cache, no download."""
    return SchemaSource(schema_dir=spec_dir, cache_dir=None, allow_download=False)


@pytest.fixture(scope="session")
def generate_revision(
    offline_source: SchemaSource,
) -> Callable[[str], GeneratedPackage]:
    """Generate (once per session) the package of a pinned revision, in memory."""
    pins = load_pins()
    cache: dict[str, GeneratedPackage] = {}

    def generate(revision: str) -> GeneratedPackage:
        if revision not in cache:
            schema = load_schema(revision, pins, offline_source)
            cache[revision] = generate_package(schema, pins.find(revision))
        return cache[revision]

    return generate


@pytest.fixture(scope="session")
def import_files(tmp_path_factory: pytest.TempPathFactory) -> Callable[[dict[str, str]], ModuleType]:
    """Write a generated file map under a fresh package name and import it."""
    root = tmp_path_factory.mktemp("imported")
    sys.path.insert(0, str(root))

    def import_(files: dict[str, str]) -> ModuleType:
        name = f"mcp_test_pkg_{next(_counter)}"
        write_tree(files, root / name)
        importlib.invalidate_caches()
        return importlib.import_module(name)

    return import_


def models_module(revision: str) -> ModuleType:
    """The committed generated models of a released revision."""
    return importlib.import_module(f"mcp_generated.v{revision.replace('-', '_')}.models")


# -- subprocess servers (the interop and scale-out tests) -------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(process: subprocess.Popen[bytes], port: int, timeout: float = 15.0) -> None:
    """Wait until ``process`` accepts connections on ``port`` (failing if it exits first)."""
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, f"the server exited with {process.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on port {port}"
            time.sleep(0.05)


def read_port(process: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
    """The ``PORT <n>`` line a peer prints on its stdout once it listens."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.1)
        if ready:
            line = process.stdout.readline().decode()
            assert line.startswith("PORT "), f"unexpected output {line!r}"
            return int(line.split()[1])
        assert process.poll() is None, f"the peer exited with {process.returncode}"
    raise AssertionError("the peer did not report its port")


def stop_process(process: subprocess.Popen[bytes], timeout: float = 5.0, *, strict: bool = False) -> None:
    """SIGTERM, then SIGKILL after ``timeout``; ``strict``: needing SIGKILL is a failure."""
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)
        if strict:
            raise AssertionError("the server did not stop on SIGTERM") from None


# -- asyncio's "never retrieved" / "destroyed but pending" reports fail the test ---------------
#
# asyncio reports a task that died with an exception nobody retrieved, a future likewise, and a
# task garbage-collected while still pending, through the event loop's exception handler (the
# default handler logs them on the ``asyncio`` logger; anyio's test runner keeps exceptions for
# later and may lose them). None of these is a warning, so ``-W error`` cannot catch them:
# every loop's ``call_exception_handler`` is wrapped instead, and a test during which asyncio
# reported one fails. Garbage is collected at the end of each test, and also just before a
# loop shuts down (``asyncio.run``, anyio's runner, uvicorn in a thread), which would otherwise
# cancel a pending task that nothing holds any more (it would have been destroyed, and
# reported, in a long-running process) before any collection sees it. What exists once the
# tests are collected (modules, generated models) is frozen out of those collections, which
# keeps them cheap.

ASYNCIO_LEAK_MESSAGES = (
    "Task exception was never retrieved",
    "Future exception was never retrieved",
    "Task was destroyed but it is pending",
)

#: Known leaks, each found by the test named here, that cannot be fixed here (none today).
#: nodeid (without parameters) -> (text the report must contain, why it is allowed). Any
#: other report during that test still fails it.
ALLOWED_ASYNCIO_LEAKS: dict[str, tuple[str, str]] = {}

_asyncio_reports: list[str] = []
_reports_lock = threading.Lock()


def _describe_asyncio_report(context: dict[str, Any]) -> str:
    parts = [str(context.get("message", ""))]
    for key in ("task", "future"):
        if key in context:
            parts.append(f"{key}={context[key]!r}")
    if context.get("exception") is not None:
        parts.append(f"exception={context['exception']!r}")
    return " ".join(parts)


def _install_asyncio_report_hooks() -> None:
    report = asyncio.BaseEventLoop.call_exception_handler
    if getattr(report, "_mcp_leak_hook", False):
        return

    def call_exception_handler(self: asyncio.BaseEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", ""))
        if message.startswith(ASYNCIO_LEAK_MESSAGES):
            with _reports_lock:
                _asyncio_reports.append(_describe_asyncio_report(context))
        report(self, context)

    call_exception_handler._mcp_leak_hook = True  # type: ignore[attr-defined]
    asyncio.BaseEventLoop.call_exception_handler = call_exception_handler  # type: ignore[method-assign]

    cancel_all = asyncio.runners._cancel_all_tasks  # type: ignore[attr-defined]

    def cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
        gc.collect()  # a pending task nothing holds is destroyed (and reported), not cancelled
        cancel_all(loop)

    asyncio.runners._cancel_all_tasks = cancel_all_tasks  # type: ignore[attr-defined]


_install_asyncio_report_hooks()


def _take_asyncio_reports() -> list[str]:
    with _reports_lock:
        taken = list(_asyncio_reports)
        _asyncio_reports.clear()
    return taken


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def no_asyncio_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if asyncio reported a never-retrieved exception or a pending task
    destroyed during it (see ``ALLOWED_ASYNCIO_LEAKS`` for the known ones)."""
    earlier = _take_asyncio_reports()  # left by a module fixture's teardown, say
    yield
    gc.collect()
    reports = earlier + _take_asyncio_reports()
    allowed = ALLOWED_ASYNCIO_LEAKS.get(request.node.nodeid.split("[")[0])
    if allowed is not None:
        reports = [report for report in reports if allowed[0] not in report]
    if reports:
        pytest.fail(
            "asyncio reported a leak during this test (or just before it):\n  "
            + "\n  ".join(reports),
            pytrace=False,
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Reports that came after the last test (session fixtures' teardown) fail the run."""
    gc.collect()
    reports = _take_asyncio_reports()
    if reports:
        sys.stderr.write("asyncio reported a leak after the last test:\n  " + "\n  ".join(reports) + "\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def notes_http_url() -> Iterator[str]:
    """``examples/notes_server.py --port N``, a fresh process per test (the notes live in it):
    its Streamable HTTP endpoint."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "examples" / "notes_server.py"), "--port", str(port)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)

