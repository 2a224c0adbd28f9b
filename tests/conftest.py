"""Shared fixtures: where the official schemas are, and packages generated on demand."""

from __future__ import annotations

import importlib
import itertools
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from mcp_codegen.generate import GeneratedPackage, generate_package
from mcp_codegen.load import SchemaSource, load_schema
from mcp_codegen.output import write_tree
from mcp_codegen.pins import load_pins

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RELEASED = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
_counter = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    """Resolve a relative ``MCP_CODEGEN_SCHEMA_DIR`` (the README's ``../shared/mcp-spec``)
    once, against the folder pytest was started from: tests change directory and start
    programs elsewhere, which would read it against their own folder."""
    configured = os.environ.get("MCP_CODEGEN_SCHEMA_DIR")
    if configured and not os.path.isabs(configured):
        resolved = (config.invocation_params.dir / configured).resolve()
        os.environ["MCP_CODEGEN_SCHEMA_DIR"] = str(resolved)


def official_spec_dir() -> Path:
    """``$MCP_CODEGEN_SCHEMA_DIR``, else ``../shared/mcp-spec`` beside the repository."""
    configured = os.environ.get("MCP_CODEGEN_SCHEMA_DIR")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "mcp-spec"


@pytest.fixture(scope="session")
def spec_dir() -> Path:
    path = official_spec_dir()
    if not (path / "2025-06-18" / "schema.json").is_file():
        pytest.fail(f"official schemas not found at {path}; set MCP_CODEGEN_SCHEMA_DIR")
    return path


@pytest.fixture(scope="session")
def offline_source(spec_dir: Path) -> SchemaSource:
    """Schemas from the shared folder only: no cache, no download."""
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
