"""A caller typed with a newer revision reads an older server's results (the lift).

The default client (``protocol="auto"`` with no handlers) is typed with the newest package,
2026-07-28, whose list results and ``resources/read`` result require ``ttlMs`` and
``cacheScope``. A handshake-era server never sends them, so the client fills what the older
server left unsaid with its meaning (``ABSENT_RESULT_FIELDS``: immediately stale, private)
before validating. Every required field any newer revision adds to a result must be covered.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest
from conftest import RELEASED
from pydantic import BaseModel

from typedmcp.connecting import connect_direct, connect_memory
from typedmcp.protocol.results import ABSENT_RESULT_FIELDS, lifted, required_wire_names
from mcp_generated import v2024_11_05, v2025_06_18, v2025_11_25
from mcp_generated.v2024_11_05 import models
from mcp_generated.v2024_11_05.server import ServerHandlers

HANDSHAKE = [v2024_11_05, v2025_06_18, v2025_11_25]


def package(revision: str) -> Any:
    return importlib.import_module(f"mcp_generated.v{revision.replace('-', '_')}")


def wire_names(model: Any) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def added_required_result_fields() -> set[tuple[str, str, str, str]]:
    """(newer, older, method, field) for each required result field the older lacks."""
    found = set()
    for index, newer in enumerate(RELEASED):
        for older in RELEASED[:index]:
            old_table = package(older).dispatch.REQUESTS
            for method, spec in package(newer).dispatch.REQUESTS.items():
                old = old_table.get(method)
                new_type, old_type = spec.result_type, old.result_type if old else None
                if not (isinstance(old_type, type) and issubclass(old_type, BaseModel)):
                    continue
                for field in required_wire_names(new_type) - wire_names(old_type):
                    found.add((newer, older, method, field))
    return found


def test_every_required_result_field_a_newer_revision_adds_has_a_meaning_when_absent() -> None:
    added = added_required_result_fields()
    assert added, "the check sees the fields 2026-07-28 adds (ttlMs, cacheScope)"
    uncovered = sorted(item for item in added if item[3] not in ABSENT_RESULT_FIELDS)
    assert uncovered == []  # a new revision added one: give it its meaning when absent
    assert {item[3] for item in added} == set(ABSENT_RESULT_FIELDS)  # and no stale entry


def test_lifting_fills_only_what_is_missing_and_leaves_its_input_alone() -> None:
    model = package("2026-07-28").models.ListToolsResult
    raw = {"tools": []}
    assert lifted(model, raw) == {"tools": [], "ttlMs": 0, "cacheScope": "private"}
    assert raw == {"tools": []}
    given = {"tools": [], "ttlMs": 5, "cacheScope": "public"}
    assert lifted(model, given) is given
    task = {"task": {"taskId": "t"}}
    assert lifted(model, task) is task  # an alternative result (a created task): as is
    assert lifted(package("2026-07-28").models.CallToolResult, {"content": []}) == {"content": []}


class Library(ServerHandlers):
    """A 2024-11-05 server with every cacheable list and a resource."""

    async def list_tools(self, params: Any, ctx: Any) -> models.ListToolsResult:
        return models.ListToolsResult(
            tools=[models.Tool(name="t", input_schema=models.ToolInputSchema(type="object"))]
        )

    async def list_resources(self, params: Any, ctx: Any) -> models.ListResourcesResult:
        return models.ListResourcesResult(resources=[models.Resource(uri="memo://a", name="a")])

    async def list_resource_templates(
        self, params: Any, ctx: Any
    ) -> models.ListResourceTemplatesResult:
        return models.ListResourceTemplatesResult(resource_templates=[])

    async def read_resource(self, params: Any, ctx: Any) -> models.ReadResourceResult:
        return models.ReadResourceResult(
            contents=[models.TextResourceContents(uri=params.uri, text="hello")]
        )

    async def list_prompts(self, params: Any, ctx: Any) -> models.ListPromptsResult:
        return models.ListPromptsResult(prompts=[models.Prompt(name="p")])


@pytest.mark.parametrize("connector", [connect_memory, connect_direct], ids=["memory", "direct"])
@pytest.mark.parametrize("served", HANDSHAKE, ids=lambda p: p.__name__.split(".")[-1])
def test_the_default_client_reads_every_cacheable_result_of_a_handshake_server(
    connector: Any, served: Any
) -> None:
    async def body() -> None:
        async with connector(Library(), server_options={"packages": [served]}) as client:
            session = client.session
            assert (session.era, session.protocol_version) == ("handshake", served.PROTOCOL_VERSION)
            assert session.own_package.version == "2026-07-28"  # typed with the newest
            results = [
                await client.list_tools(),
                await client.list_resources(),
                await client.list_resource_templates(),
                await client.read_resource(uri="memo://a"),
                await client.list_prompts(),
            ]
            for result in results:
                assert (result.ttl_ms, result.cache_scope) == (0, "private")
            assert results[0].tools[0].name == "t"
            assert results[3].contents[0].text == "hello"

    asyncio.run(body())
