"""A caller typed with a newer revision reads an older server's results (the lift).

The default client (``protocol="auto"`` with no handlers) is typed with the newest package,
2026-07-28, whose list results and ``resources/read`` result carry ``ttlMs`` and
``cacheScope``. A handshake-era server never sends them, so what the older server left
unsaid means ``ABSENT_RESULT_FIELDS`` (immediately stale, private): the models default
them so (``rewrite.default_cache_hints``), and any other field a newer revision requires
is filled from that table before validating (:func:`lifted`). Every field a newer revision
adds to a result must be covered, by a default of that meaning or by the table.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest
from conftest import RELEASED
from pydantic import BaseModel, Field

from typedmcp.connecting import connect_direct, connect_memory
from typedmcp.protocol.results import ABSENT_RESULT_FIELDS, lifted
from mcp_generated import v2024_11_05, v2025_06_18, v2025_11_25
from mcp_generated.v2024_11_05 import models
from mcp_generated.v2024_11_05.server import ServerHandlers

HANDSHAKE = [v2024_11_05, v2025_06_18, v2025_11_25]


def package(revision: str) -> Any:
    return importlib.import_module(f"mcp_generated.v{revision.replace('-', '_')}")


def wire_names(model: Any) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def added_result_fields() -> set[tuple[str, str, str, str, bool, Any]]:
    """(newer, older, method, field, required, default) for each result field the newer
    revision has and the older lacks (optional fields without a default left out)."""
    found = set()
    for index, newer in enumerate(RELEASED):
        for older in RELEASED[:index]:
            old_table = package(older).dispatch.REQUESTS
            for method, spec in package(newer).dispatch.REQUESTS.items():
                old = old_table.get(method)
                new_type, old_type = spec.result_type, old.result_type if old else None
                if not (isinstance(old_type, type) and issubclass(old_type, BaseModel)):
                    continue
                for name, info in new_type.model_fields.items():
                    field = info.alias or name
                    if field in wire_names(old_type) or (not info.is_required() and info.default is None):
                        continue
                    if field == "resultType":  # absent means "complete": the spec says so
                        continue
                    default = None if info.is_required() else info.default
                    found.add((newer, older, method, field, info.is_required(), default))
    return found


def test_every_result_field_a_newer_revision_adds_has_a_meaning_when_absent() -> None:
    added = added_result_fields()
    assert added, "the check sees the fields 2026-07-28 adds (ttlMs, cacheScope)"
    uncovered = sorted(item for item in added if item[3] not in ABSENT_RESULT_FIELDS)
    assert uncovered == []  # a new revision added one: give it its meaning when absent
    assert {item[3] for item in added} == set(ABSENT_RESULT_FIELDS)  # and no stale entry
    # a model's default for such a field says what the table says
    defaulted = {(item[3], item[5]) for item in added if not item[4]}
    assert defaulted == set(ABSENT_RESULT_FIELDS.items())


class Cached(BaseModel):
    """A result type that requires caching hints (as 2026-07-28's did before they had
    defaults): what :func:`lifted` is for."""

    tools: list[Any]
    ttl_ms: int = Field(alias="ttlMs")
    cache_scope: str = Field(alias="cacheScope")


def test_lifting_fills_only_what_is_missing_and_leaves_its_input_alone() -> None:
    raw = {"tools": []}
    assert lifted(Cached, raw) == {"tools": [], "ttlMs": 0, "cacheScope": "private"}
    assert raw == {"tools": []}
    given = {"tools": [], "ttlMs": 5, "cacheScope": "public"}
    assert lifted(Cached, given) is given
    task = {"task": {"taskId": "t"}}
    assert lifted(Cached, task) is task  # an alternative result (a created task): as is
    assert lifted(package("2026-07-28").models.CallToolResult, {"content": []}) == {"content": []}
    # 2026-07-28's own list results need no lift: their defaults mean the same
    model = package("2026-07-28").models.ListToolsResult
    assert lifted(model, raw) is raw
    read = model.model_validate(raw, by_name=False)
    assert (read.ttl_ms, read.cache_scope) == (0, "private")


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
