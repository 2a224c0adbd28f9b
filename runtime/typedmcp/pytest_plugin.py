"""The runtime's pytest plugin (the ``pytest11`` entry point ``typedmcp``): fixtures that
connect a typed client to your server, in memory or over a real stdio or HTTP transport,
in either era. See :mod:`typedmcp.testing` and the testing how-to.

- ``mcp_client``: a :class:`~typedmcp.testing.McpClientFactory`:
  ``async with mcp_client(app, transport="http", revision="2025-11-25") as client:``;
- ``mcp_transport``: each of ``"memory"``, ``"stdio"``, ``"http"`` in turn (a test that
  takes it runs three times);
- ``mcp_revision``: ``"2025-11-25"`` (handshake era) and ``"2026-07-28"`` (stateless).

The fixtures are plain (not async): the client is opened inside the test, so they work
under anyio's plugin, pytest-asyncio or ``asyncio.run`` alike. Nothing of the runtime is
imported until a test asks for one of them: pytest starts as fast without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing import McpClientFactory, Transport

#: The parameters of ``mcp_transport`` and ``mcp_revision`` (kept equal to
#: ``typedmcp.testing.TRANSPORTS``/``REVISIONS`` by a test; written out here so that
#: collecting a test module does not import the runtime).
_TRANSPORTS = ("memory", "stdio", "http")
_REVISIONS = ("2025-11-25", "2026-07-28")


@pytest.fixture
def mcp_client() -> McpClientFactory:
    """Connect a typed client to a server object: ``async with mcp_client(app,
    transport=..., revision=...) as client:`` (see ``typedmcp.testing.McpClientFactory``)."""
    from .testing import McpClientFactory

    return McpClientFactory()


@pytest.fixture(params=_TRANSPORTS)
def mcp_transport(request: pytest.FixtureRequest) -> Transport:
    """Each transport in turn: ``"memory"``, ``"stdio"``, ``"http"``."""
    transport: Transport = request.param
    return transport


@pytest.fixture(params=_REVISIONS)
def mcp_revision(request: pytest.FixtureRequest) -> str:
    """One revision of each era in turn: ``"2025-11-25"`` (handshake), ``"2026-07-28"``
    (stateless)."""
    revision: str = request.param
    return revision
