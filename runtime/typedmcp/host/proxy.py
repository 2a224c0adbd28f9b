"""An :class:`~typedmcp.app.core.McpApp` that serves another server, in process:
``proxy_app("https://example.com/mcp")``, ``proxy_app(["python", "notes_server.py"])`` or
``proxy_app({"command": ..., "env": ...})`` (one ``mcpServers`` entry).

It is the gateway's machinery with one server: a :class:`~.core.Host` connects the server
(stdio, Streamable HTTP or HTTP+SSE, either era; restarted with back-off when it fails) and
the gateway's handlers (:func:`.gateway.gateway_handlers`) serve its tools, resources,
templates and prompts under their own names: calls are checked against the tool's
``inputSchema`` and time-limited as the host does, progress comes back to the caller, the
server's sampling and elicitation requests go to the caller's client when it is a
handshake-era session that declared them (else to the host's hooks: ``host_options=
{"sampling": hook}``; a 2026-07-28 caller is not asked, as the gateway process would with
its parked calls, since an ``McpApp`` cannot return those rounds), and its list changes
reach the proxy's clients (its ``resources/updated`` do not: a subscription is not
forwarded). The server is connected on the first request (or ``await
proxy.start()``); ``await proxy.aclose()`` (or ``async with proxy``) stops it.

Being an ``McpApp``, a proxy is served by every launcher (``run_stdio``, ``http_app``,
``connect_memory``), may declare tools of its own beside those it forwards, and is mounted
in another app with :meth:`McpApp.mount <typedmcp.app.core.McpApp.mount>`.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from typing_extensions import Self

from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer

from ..app.core import McpApp
from ..protocol.results import to_wire
from ..protocol.stubs import RequestContext
from .changes import Change
from .config import ConfigError
from .core import Host
from .gateway import ANNOUNCE, gateway_handlers

Ctx = RequestContext[ClientPeer]
M = TypeVar("M", bound=BaseModel)
#: The proxied server's name in the host (the proxy exports its names unprefixed).
SERVER = "proxied"


def server_entry(target: str | Sequence[str] | Mapping[str, Any]) -> dict[str, Any]:
    """The ``mcpServers`` entry of ``target``: a URL, a command line (a string split as a
    shell would, or a list), or an entry as it is."""
    if isinstance(target, Mapping):
        return dict(target)
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            return {"url": target}
        target = shlex.split(target)
    words = list(target)
    if not words or not all(isinstance(word, str) for word in words):
        raise ConfigError(
            f"proxy_app needs a URL, a command line or an mcpServers entry, not {target!r}: "
            "e.g. proxy_app('https://example.com/mcp') or proxy_app(['python', 'server.py'])"
        )
    return {"command": words[0], "args": words[1:]}


class ProxyApp(McpApp):
    """An app serving another server's tools, resources, templates and prompts (see the
    module); ``host`` is the :class:`~.core.Host` that connects it."""

    def __init__(
        self,
        target: str | Sequence[str] | Mapping[str, Any],
        *,
        name: str = "proxy",
        version: str = "0.0.0",
        instructions: str | None = None,
        host_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(name, version, instructions=instructions)
        entry = {**server_entry(target), "prefix": ""}
        self.host = Host(
            {"mcpServers": {SERVER: entry}},
            **{"client_requests": ("sampling", "elicitation"), **(host_options or {})},
        )
        self._started: asyncio.Future[None] | None = None
        self._gateway: Any = None
        self._unsubscribe = self.host.on_change(self._announce_change)

    async def start(self) -> None:
        """Connect the server (once; a server that fails is retried in the background, and
        its tools are listed when it is up)."""
        if self._started is None:
            self._started = asyncio.ensure_future(self._start())
        await asyncio.shield(self._started)

    async def _start(self) -> None:
        await self.host.start()
        self._gateway = gateway_handlers(self.host, every_method=True, park=False)

    async def aclose(self) -> None:
        """Stop the server (its process, for a stdio one)."""
        self._unsubscribe()
        await self.host.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _announce_change(self, change: Change) -> None:
        method = ANNOUNCE.get(change.kind)
        if method is not None:
            self._announce(getattr(self.changes, method))

    async def _forward(self, method: str, params: Any, ctx: Ctx, model: type[M]) -> M:
        if self._started is None or not self._started.done():
            await self.start()
        return model.model_validate(to_wire(await getattr(self._gateway, method)(params, ctx)))

    # -- serving: the app's own declarations first, then the server's ---------------------------

    async def list_tools(self, params: models.PaginatedRequestParams | None, ctx: Ctx) -> models.ListToolsResult:
        own = await super().list_tools(params, ctx)
        forwarded = await self._forward("list_tools", params, ctx, models.ListToolsResult)
        return models.ListToolsResult(tools=[*own.tools, *forwarded.tools])

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        if params.name in self.tools:
            return await super().call_tool(params, ctx)
        return await self._forward("call_tool", params, ctx, models.CallToolResult)

    async def list_prompts(self, params: models.PaginatedRequestParams | None, ctx: Ctx) -> models.ListPromptsResult:
        own = await super().list_prompts(params, ctx)
        forwarded = await self._forward("list_prompts", params, ctx, models.ListPromptsResult)
        return models.ListPromptsResult(prompts=[*own.prompts, *forwarded.prompts])

    async def get_prompt(self, params: models.GetPromptRequestParams, ctx: Ctx) -> models.GetPromptResult:
        if params.name in self.prompts:
            return await super().get_prompt(params, ctx)
        return await self._forward("get_prompt", params, ctx, models.GetPromptResult)

    async def list_resources(self, params: models.PaginatedRequestParams | None, ctx: Ctx) -> models.ListResourcesResult:
        own = await super().list_resources(params, ctx)
        forwarded = await self._forward("list_resources", params, ctx, models.ListResourcesResult)
        return models.ListResourcesResult(resources=[*own.resources, *forwarded.resources])

    async def list_resource_templates(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListResourceTemplatesResult:
        own = await super().list_resource_templates(params, ctx)
        forwarded = await self._forward("list_resource_templates", params, ctx, models.ListResourceTemplatesResult)
        return models.ListResourceTemplatesResult(resource_templates=[*own.resource_templates, *forwarded.resource_templates])

    async def read_resource(self, params: models.ReadResourceRequestParams, ctx: Ctx) -> models.ReadResourceResult:
        if self._serves(params.uri):
            return await super().read_resource(params, ctx)
        return await self._forward("read_resource", params, ctx, models.ReadResourceResult)

    async def complete(self, params: models.CompleteRequestParams, ctx: Ctx) -> models.CompleteResult:
        ref = params.ref
        own = self.prompts if isinstance(ref, models.PromptReference) else self.resources
        if (ref.name if isinstance(ref, models.PromptReference) else ref.uri) in own:
            return await super().complete(params, ctx)
        return await self._forward("complete", params, ctx, models.CompleteResult)


def proxy_app(
    target: str | Sequence[str] | Mapping[str, Any],
    *,
    name: str = "proxy",
    version: str = "0.0.0",
    instructions: str | None = None,
    host_options: Mapping[str, Any] | None = None,
) -> ProxyApp:
    """An ``McpApp`` serving the server at ``target`` (a URL, a command line, or an
    ``mcpServers`` entry), in process (see :mod:`typedmcp.host.proxy`). ``host_options``
    go to the :class:`~.core.Host` (``sampling=``, ``roots=``, ...)."""
    return ProxyApp(target, name=name, version=version, instructions=instructions, host_options=host_options)


__all__ = ["ProxyApp", "proxy_app", "server_entry"]
