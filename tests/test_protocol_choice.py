"""``protocol=`` names what a client offers: ``"auto"``, one revision by its date, a
generated package, or a list of them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from typedmcp import McpApp, connect_memory


def notes_app() -> McpApp:
    app = McpApp("notes")

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    return app


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25", "2025-06-18", "2024-11-05"])
def test_a_revision_date_pins_that_revision(revision: str) -> None:
    async def scenario() -> tuple[str | None, str]:
        async with connect_memory(notes_app(), protocol=revision) as client:
            any_revision: Any = client  # (a revision chosen at run time: typed as the base Outbound)
            result = await any_revision.call_tool(name="echo", arguments={"text": "hi"})
            return client.session.protocol_version, result.content[0].text

    assert asyncio.run(scenario()) == (revision, "hi")


def test_an_unknown_revision_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(ValueError) as refused:
        asyncio.run(connect_memory(notes_app(), protocol="2025-13-01").__aenter__())
    message = str(refused.value)
    assert "'2025-13-01'" in message and "'2025-11-25'" in message and "'2026-07-28'" in message
