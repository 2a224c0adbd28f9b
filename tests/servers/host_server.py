"""A configurable fixture server for the host tests (``tests/test_host_*.py``).

    python tests/servers/host_server.py [--tools a,b] [--handshake-only] [--port N]
        [--started-marker FILE] [--start-delay SECONDS] [--await-marker FILE]

Besides the tools named by ``--tools`` (each echoes its arguments), it has tools to make it
misbehave and to look inside it: ``crash`` (SIGKILL itself mid-call), ``hang`` (block its
event loop for good), ``slow`` (sleep; cancellations recorded), ``pid``, ``storm`` (add tool ``add``,
then send ``count`` tools/list_changed at once), ``add_tool``/``remove_tool`` (change the list and
say so), ``stats`` (how often each list was asked for, which calls were cancelled),
``progress``, ``log``, ``sample``, ``elicit`` and ``roots`` (ask the client). Every run
writes its pid to ``$HOST_SERVER_PIDFILE`` (appending), so tests can find and reap it.
``--started-marker`` creates a file as soon as the process runs (a test can tell which
servers were started at all), ``--start-delay`` waits that long before serving (a server
slow to start), ``--await-marker`` serves only once that file exists (at most 30 s; else it
exits with code 1): two servers each waiting for the other's start marker come up only if
they were started together.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import time
from typing import Any

from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import run_stdio
from typedmcp.stateless.server import CachePolicy
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

Ctx = RequestContext[ClientPeer]
OBJECT = {"type": "object", "properties": {}}
STATS: dict[str, Any] = {
    "tools/list": 0, "prompts/list": 0, "resources/list": 0, "cancelled": [], "roots_changed": 0,
}
FIXED = {
    "echo": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "crash": OBJECT,
    "hang": OBJECT,
    "slow": {"type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}},
    "pid": OBJECT,
    "storm": {"type": "object", "properties": {"count": {"type": "integer"}, "add": {"type": "string"}}},
    "add_tool": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    "remove_tool": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    "stats": OBJECT,
    "progress": OBJECT,
    "log": OBJECT,
    "sample": {
        "type": "object",
        "properties": {"prompt": {"type": "string"}, "delay": {"type": "number"}},
        "required": ["prompt"],
    },
    "elicit": OBJECT,
    "roots": OBJECT,
}


def text(value: str) -> models.TextContent:
    return models.TextContent(type="text", text=value)


def result(value: Any) -> models.CallToolResult:
    return models.CallToolResult(content=[text(value if isinstance(value, str) else json.dumps(value))])


class HostFixture(ServerHandlers):
    def __init__(self, extra: list[str]) -> None:
        self.tools: dict[str, dict[str, Any]] = {name: schema for name, schema in FIXED.items()}
        for name in extra:
            self.tools[name] = OBJECT

    async def list_tools(self, params: Any, ctx: Ctx) -> models.ListToolsResult:
        STATS["tools/list"] += 1
        return models.ListToolsResult(
            tools=[
                models.Tool(name=name, description=f"{name} tool",
                            input_schema=models.ToolInputSchema.model_validate(schema))
                for name, schema in self.tools.items()
            ]
        )

    async def on_roots_list_changed(self, params: Any, ctx: Ctx) -> None:
        STATS["roots_changed"] += 1

    async def list_prompts(self, params: Any, ctx: Ctx) -> models.ListPromptsResult:
        STATS["prompts/list"] += 1
        return models.ListPromptsResult(prompts=[models.Prompt(name="hello", description="Say hello")])

    async def get_prompt(self, params: models.GetPromptRequestParams, ctx: Ctx) -> models.GetPromptResult:
        return models.GetPromptResult(messages=[models.PromptMessage(role="user", content=text("hello"))])

    async def list_resources(self, params: Any, ctx: Ctx) -> models.ListResourcesResult:
        STATS["resources/list"] += 1
        return models.ListResourcesResult(resources=[models.Resource(uri="host://pid", name="pid")])

    async def read_resource(self, params: models.ReadResourceRequestParams, ctx: Ctx) -> models.ReadResourceResult:
        return models.ReadResourceResult(
            contents=[models.TextResourceContents(uri=params.uri, text=str(os.getpid()))]
        )

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        args: dict[str, Any] = params.arguments or {}
        name = params.name
        if name == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        if name == "hang":
            time.sleep(3600)  # the whole server stops answering
        if name == "slow":
            try:
                await asyncio.sleep(float(args.get("seconds", 30)))
            except asyncio.CancelledError:
                STATS["cancelled"].append(args.get("label"))
                raise
            return result("slept")
        if name == "pid":
            return result(str(os.getpid()))
        if name == "storm":
            if "add" in args:
                self.tools[str(args["add"])] = OBJECT
            for _ in range(int(args.get("count", 50))):
                await ctx.peer.send_tool_list_changed()
            return result("stormed")
        if name == "add_tool":
            self.tools[str(args["name"])] = OBJECT
            await ctx.peer.send_tool_list_changed()
            return result("added")
        if name == "remove_tool":
            self.tools.pop(str(args["name"]), None)
            await ctx.peer.send_tool_list_changed()
            return result("removed")
        if name == "stats":
            return result(STATS)
        if name == "progress":
            for step in (1, 2, 3):
                await ctx.report_progress(step, 3, f"step {step}")
            return result("progressed")
        if name == "log":
            await ctx.log("warning", "careful", "fixture")
            return result("logged")
        if name == "sample":
            await asyncio.sleep(float(args.get("delay", 0)))
            message = models.SamplingMessage(role="user", content=text(str(args["prompt"])))
            answer = await ctx.peer.create_message(messages=[message], max_tokens=20)
            content = answer.content
            return result(content.text if isinstance(content, models.TextContent) else "?")
        if name == "elicit":
            form = models.ElicitRequestFormParamsRequestedSchema.model_validate(
                {"type": "object", "properties": {"name": {"type": "string"}}}
            )
            answer = await ctx.peer.elicit(models.ElicitRequestFormParams(message="Name?", requested_schema=form))
            return result({"action": answer.action, "content": answer.content})
        if name == "roots":
            roots = await ctx.peer.list_roots()
            return result([root.uri for root in roots.roots])
        return result(args)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", default="")
    parser.add_argument("--handshake-only", action="store_true")
    parser.add_argument("--port", type=int)
    parser.add_argument("--ttl", type=int, help="2026-07-28 lists are fresh this many ms")
    parser.add_argument("--started-marker", help="create this file at start")
    parser.add_argument("--start-delay", type=float, default=0.0, help="seconds before serving")
    parser.add_argument("--await-marker", help="serve only once this file exists")
    args = parser.parse_args()
    pidfile = os.environ.get("HOST_SERVER_PIDFILE")
    if pidfile:
        with open(pidfile, "a") as out:
            out.write(f"{os.getpid()}\n")
    if args.started_marker:
        with open(args.started_marker, "a") as out:
            out.write(f"{os.getpid()}\n")
    if args.start_delay:
        time.sleep(args.start_delay)  # a server slow to start (opening a database, say)
    if args.await_marker:
        deadline = time.monotonic() + 30
        while not os.path.exists(args.await_marker):
            if time.monotonic() > deadline:
                raise SystemExit(f"{args.await_marker} did not appear within 30 s")
            time.sleep(0.02)
    handlers = HostFixture([name for name in args.tools.split(",") if name])
    options: dict[str, Any] = {"list_changed": ("tools", "prompts", "resources")}
    if args.ttl is not None:
        options["cache"] = CachePolicy(ttl_ms=args.ttl, scope="public")
    if args.handshake_only:
        options["packages"] = [v2025_11_25]
    if args.port is None:
        run_stdio(handlers, **options)
        return
    import uvicorn

    from typedmcp.serving import http_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    server = uvicorn.Server(uvicorn.Config(http_app(handlers, **options), log_level="warning"))
    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets=sockets)
        print(f"PORT {sock.getsockname()[1]}", flush=True)

    server.startup = startup  # type: ignore[method-assign]
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
