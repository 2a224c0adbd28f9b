"""The client under test for the official conformance suite (client mode).

The harness runs ``python examples/conformance_client.py <server url>`` with the scenario in
``MCP_CONFORMANCE_SCENARIO``. Each scenario is a few lines of ordinary client code: connect
(Streamable HTTP), do what the scenario asks, exit 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp_codegen.runtime.client import connect_http
from mcp_generated import v2024_11_05, v2025_03_26, v2025_06_18, v2025_11_25
from mcp_generated.v2025_11_25 import client as client_stubs
from mcp_generated.v2025_11_25 import models

PROTOCOLS = [v2025_11_25, v2025_06_18, v2025_03_26, v2024_11_05]


class ConformanceHandlers(client_stubs.ClientHandlers):
    """Answers what the mock servers ask: elicitation accepted with the schema's defaults."""

    async def elicit(self, params: Any, ctx: Any) -> models.ElicitResult:
        schema = params.requested_schema.model_dump(mode="json", by_alias=True, exclude_unset=True)
        defaults = {
            name: prop["default"]
            for name, prop in schema.get("properties", {}).items()
            if isinstance(prop, dict) and "default" in prop
        }
        return models.ElicitResult(action="accept", content=defaults)


async def run(url: str, scenario: str) -> None:
    async with connect_http(url, protocol=PROTOCOLS, handlers=ConformanceHandlers()) as client:
        if "tools" not in client.session.peer_capabilities:
            return  # e.g. the initialize scenario: the handshake is the whole test
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        if scenario == "tools_call":
            await client.call_tool(name="add_numbers", arguments={"a": 2, "b": 3})
        elif scenario == "elicitation-sep1034-client-defaults":
            await client.call_tool(name="test_client_elicitation_defaults", arguments={})
        elif scenario == "sse-retry":
            await client.call_tool(name="test_reconnection", arguments={})
        elif scenario == "json-schema-2020-12-preservation":
            focal = next(t for t in tools.tools if t.name == "json_schema_2020_12_tool")
            schema = focal.input_schema.model_dump(mode="json", by_alias=True, exclude_unset=True)
            echo = next(name for name in names if name != focal.name)
            await client.call_tool(name=echo, arguments={"schema": schema})


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: conformance_client.py SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}") or "{}")
    del context  # auth scenarios (which use it) are not supported yet
    asyncio.run(run(sys.argv[-1], scenario))
    return 0


if __name__ == "__main__":
    sys.exit(main())
