"""Our MCP Apps wire read by the ext-apps package itself (npm ``@modelcontextprotocol/ext-apps``
at the pinned version, Node 22 from ``scripts/peers.sh``, the package from
``scripts/ext_apps_pin.sh``, which also checks the pinned schema against it): its zod schemas
(``McpUiToolMetaSchema``, ``McpUiResourceMetaSchema``) parse our tool and contents ``_meta.ui``,
and its host-side helpers (``getToolUiResourceUri``, ``isToolVisibilityAppOnly``,
``buildAllowAttribute``) read our tools and permissions as a host would."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from typing import Any

import pytest
from conftest import REPO_ROOT
from test_mcp_apps import make_app

from mcp_generated import v2025_11_25
from typedmcp.connecting import connect_memory

PEERS = REPO_ROOT / ".peers"
EXT_APPS = PEERS / "ext-apps"
CHECK = """
import { readFileSync } from "node:fs";
import { getToolUiResourceUri, isToolVisibilityAppOnly, buildAllowAttribute } from "@modelcontextprotocol/ext-apps/app-bridge";
import { McpUiToolMetaSchema, McpUiResourceMetaSchema } from "@modelcontextprotocol/ext-apps";
const wire = JSON.parse(readFileSync(0, "utf8"));
const tools = Object.fromEntries(wire.tools.map((tool) => [tool.name, {
  uri: getToolUiResourceUri(tool) ?? null,
  appOnly: isToolVisibilityAppOnly(tool),
  metaParses: tool._meta?.ui === undefined ? null : McpUiToolMetaSchema.safeParse(tool._meta.ui).success,
}]));
const ui = wire.contents._meta.ui;
console.log(JSON.stringify({
  tools,
  resourceMetaParses: McpUiResourceMetaSchema.safeParse(ui).success,
  allow: buildAllowAttribute(ui.permissions),
  brokenMetaParses: McpUiResourceMetaSchema.safeParse({ ...ui, prefersBorder: "no" }).success,
}));
"""


@pytest.fixture(scope="module")
def node() -> str:
    """Node 22 and the pinned ext-apps package, by the project's scripts (no skip: fails)."""
    environment = {**os.environ, "PATH": f"{PEERS / 'bin'}:{os.environ['PATH']}"}
    for script in ("peers.sh", "ext_apps_pin.sh"):
        ran = subprocess.run(["bash", str(REPO_ROOT / "scripts" / script)], cwd=REPO_ROOT, env=environment,
                             capture_output=True, text=True, timeout=540, check=False)
        assert ran.returncode == 0, f"scripts/{script} failed:\n{ran.stdout}{ran.stderr}"
    return str(PEERS / "bin" / "node")


def our_wire() -> dict[str, Any]:
    async def scenario() -> dict[str, Any]:
        async with connect_memory(make_app(), protocol=v2025_11_25) as client:
            tools = (await client.list_tools()).model_dump(by_alias=True, exclude_none=True)["tools"]
            read = (await client.read_resource(uri="ui://notes/board")).model_dump(by_alias=True, exclude_none=True)
            return {"tools": tools, "contents": read["contents"][0]}

    return asyncio.run(scenario())


def test_the_ext_apps_package_reads_our_wire(node: str) -> None:
    script = EXT_APPS / "check_wire.mjs"  # beside its node_modules, so the imports resolve
    script.write_text(CHECK)
    ran = subprocess.run([node, str(script)], input=json.dumps(our_wire()), cwd=EXT_APPS,
                         capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert seen["tools"] == {
        "show_board": {"uri": "ui://notes/board", "appOnly": False, "metaParses": True},
        "move_note": {"uri": "ui://notes/board", "appOnly": True, "metaParses": True},
        "plain": {"uri": None, "appOnly": False, "metaParses": None},
    }
    assert seen["resourceMetaParses"] is True
    assert seen["allow"] == "clipboard-write"
    assert seen["brokenMetaParses"] is False  # the zod check has teeth
