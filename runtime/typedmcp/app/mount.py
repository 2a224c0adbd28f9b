"""Composition in process: ``parent.mount(child, prefix="notes")`` serves a child app's
tools, resources, templates and prompts through the parent, under a prefix.

* Tools and prompts are exported as ``notes_<name>``, by the host's naming rule
  (:mod:`typedmcp.protocol.naming`, with ``_`` as the separator unless ``separator=`` says
  otherwise): a name is sanitized for the LLM APIs and shortened past 64 characters, so a
  mounted name is the same name ``mcp-host`` would give it.
* Resource URIs and URI templates get the prefix as their first path segment, as FastMCP
  does: ``notes://index`` is served as ``notes://notes/index``, ``file:///x`` as
  ``file://notes//x`` (a URI without ``://`` as ``notes/<uri>``); the contents read are
  labelled with the URI the client asked for.
* The child's list changes (``tools``, ``resources``, ``prompts``) reach the parent's
  clients; ``resources/updated`` of a child's URI is sent with its prefixed URI.
* The child's ``scopes=``/``allow=`` requirements guard the exported names in the parent's
  access policy (enforced for the parent's authenticated callers, as its own are).

A request goes to the parent's own declarations first, then to the mounts in the order
they were mounted; a list shows each exported name once, in that order. Any ``McpApp`` can
be mounted, a proxy (:func:`typedmcp.host.proxy_app`) too: the mount calls the child's
handlers with the parent's request context.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast

from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

from ..protocol.access import AccessPolicy, Requirement
from ..protocol.feed import RESOURCE_UPDATED, ChangeFeed
from ..protocol.naming import Candidate, NamingRule, assign
from ..protocol.stubs import RequestContext
from .signature import DeclarationError

Ctx = RequestContext[ClientPeer]
T = TypeVar("T")
_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,40}")
_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


class App(Protocol):
    """What a mount uses of an app (an :class:`~typedmcp.app.core.McpApp`, parent or child)."""

    name: str
    changes: ChangeFeed
    access_policy: AccessPolicy

    @property
    def tools(self) -> Mapping[str, Any]: ...
    @property
    def prompts(self) -> Mapping[str, Any]: ...
    async def list_tools(self, params: None, ctx: Ctx) -> models.ListToolsResult: ...
    async def list_prompts(self, params: None, ctx: Ctx) -> models.ListPromptsResult: ...
    async def list_resources(self, params: None, ctx: Ctx) -> models.ListResourcesResult: ...
    async def list_resource_templates(self, params: None, ctx: Ctx) -> models.ListResourceTemplatesResult: ...
    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult: ...
    async def get_prompt(self, params: models.GetPromptRequestParams, ctx: Ctx) -> models.GetPromptResult: ...
    async def read_resource(self, params: models.ReadResourceRequestParams, ctx: Ctx) -> models.ReadResourceResult: ...
    async def subscribe(self, params: models.SubscribeRequestParams, ctx: Ctx) -> models.Result: ...
    async def complete(self, params: models.CompleteRequestParams, ctx: Ctx) -> models.CompleteResult: ...


def checked_prefix(prefix: object, separator: object) -> tuple[str, str]:
    """The mount's prefix and separator, or :class:`DeclarationError` saying what is wrong."""
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise DeclarationError(
            f"mount prefix={prefix!r}: give 1 to 40 letters, digits, '_' or '-', e.g. "
            "app.mount(notes, prefix='notes')"
        )
    if not isinstance(separator, str) or not re.fullmatch(r"[A-Za-z0-9_-]{0,4}", separator):
        raise DeclarationError(
            f"mount separator={separator!r}: give at most 4 letters, digits, '_' or '-' "
            "(default '_'; mcp-host uses '__')"
        )
    return prefix, separator


class Mount:
    """One mounted child: its exported names (cached until the child says a list changed),
    its URIs under the prefix, and the relay of its change feed to the parent's."""

    def __init__(self, parent: App, child: App, prefix: str, separator: str) -> None:
        self.parent = parent
        self.child = child
        self.prefix = prefix
        self.rule = NamingRule(separator)
        #: exported name -> the child's name (None: list the child again before use)
        self._tools: dict[str, str] | None = None
        self._prompts: dict[str, str] | None = None
        self._guarded: list[tuple[dict[str, Requirement], str]] = []
        self.unsubscribe = child.changes.subscribe(self._relay)
        self.guard()

    # -- names -----------------------------------------------------------------------------

    def names(self, originals: Sequence[str]) -> list[str]:
        """The exported names of the child's ``originals`` (same order)."""
        return assign([Candidate(self.prefix, self.prefix, name) for name in originals], self.rule)

    def uri(self, uri: str) -> str:
        """The child's ``uri`` (or URI template) as the parent serves it."""
        scheme, found, rest = uri.partition("://")
        return f"{scheme}://{self.prefix}/{rest}" if found else f"{self.prefix}/{uri}"

    def original_uri(self, uri: str) -> str | None:
        """The child's URI for a URI the parent was asked for; None: not under this mount."""
        scheme, found, rest = uri.partition("://")
        head = f"{self.prefix}/"
        if found:
            return f"{scheme}://{rest[len(head):]}" if rest.startswith(head) else None
        return uri[len(head):] if uri.startswith(head) else None

    # -- listing ---------------------------------------------------------------------------

    async def tools(self, ctx: Ctx) -> list[models.Tool]:
        listed = (await self.child.list_tools(None, ctx)).tools
        exported = self.names([tool.name for tool in listed])
        self._tools = dict(zip(exported, (tool.name for tool in listed), strict=True))
        return [tool.model_copy(update={"name": name}) for tool, name in zip(listed, exported, strict=True)]

    async def prompts(self, ctx: Ctx) -> list[models.Prompt]:
        listed = (await self.child.list_prompts(None, ctx)).prompts
        exported = self.names([prompt.name for prompt in listed])
        self._prompts = dict(zip(exported, (prompt.name for prompt in listed), strict=True))
        return [p.model_copy(update={"name": name}) for p, name in zip(listed, exported, strict=True)]

    async def resources(self, ctx: Ctx) -> list[models.Resource]:
        listed = (await self.child.list_resources(None, ctx)).resources
        return [resource.model_copy(update={"uri": self.uri(resource.uri)}) for resource in listed]

    async def templates(self, ctx: Ctx) -> list[models.ResourceTemplate]:
        listed = (await self.child.list_resource_templates(None, ctx)).resource_templates
        return [t.model_copy(update={"uri_template": self.uri(t.uri_template)}) for t in listed]

    async def tool_name(self, exported: str, ctx: Ctx) -> str | None:
        """The child's name of tool ``exported``; None: the child has no such tool."""
        if self._tools is None or exported not in self._tools:
            await self.tools(ctx)  # not listed yet, or listed before the child changed
        assert self._tools is not None
        return self._tools.get(exported)

    async def prompt_name(self, exported: str, ctx: Ctx) -> str | None:
        """The child's name of prompt ``exported``; None: the child has no such prompt."""
        if self._prompts is None or exported not in self._prompts:
            await self.prompts(ctx)
        assert self._prompts is not None
        return self._prompts.get(exported)

    # -- serving -----------------------------------------------------------------------------

    async def read(self, params: models.ReadResourceRequestParams, original: str, ctx: Ctx) -> models.ReadResourceResult:
        """Read the child's ``original`` URI; contents it labels so are labelled as asked."""
        result = await self.child.read_resource(params.model_copy(update={"uri": original}), ctx)
        asked = params.uri
        return result.model_copy(update={"contents": [
            content.model_copy(update={"uri": asked}) if content.uri == original else content
            for content in result.contents
        ]})

    async def complete(self, params: models.CompleteRequestParams, ctx: Ctx) -> models.CompleteResult | None:
        """``completion/complete`` of a mounted prompt or template; None: not this mount's."""
        ref = params.ref
        if isinstance(ref, models.PromptReference):
            name = await self.prompt_name(ref.name, ctx)
            if name is None:
                return None
            return await self.child.complete(params.model_copy(update={"ref": ref.model_copy(update={"name": name})}), ctx)
        original = self.original_uri(ref.uri)
        if original is None:
            return None
        return await self.child.complete(params.model_copy(update={"ref": ref.model_copy(update={"uri": original})}), ctx)

    # -- changes and access ------------------------------------------------------------------

    def _relay(self, method: str, params: dict[str, Any]) -> None:
        """The child's change, told to the parent's clients (runs on the serving loop: the
        child's feed is published there)."""
        kind = _LIST_CHANGED.get(method)
        if kind == "tools":
            self._tools = None
        elif kind == "prompts":
            self._prompts = None
        if kind is not None:
            self.guard()
            self.parent.changes.publish(method)
        elif method == RESOURCE_UPDATED and isinstance(params.get("uri"), str):
            self.parent.changes.publish(method, {"uri": self.uri(params["uri"])})

    def guard(self) -> None:
        """Copy the child's declared requirements into the parent's policy, under the
        exported names and URIs (those copied before are replaced)."""
        policy, own = self.parent.access_policy, self.child.access_policy
        for table, guarded in self._guarded:
            table.pop(guarded, None)
        self._guarded = []
        copies: list[tuple[dict[str, Requirement], Mapping[str, Requirement], Mapping[str, str]]] = [
            (policy.tools, own.tools, dict(zip(self.child.tools, self.names(list(self.child.tools)), strict=True))),
            (policy.prompts, own.prompts, dict(zip(self.child.prompts, self.names(list(self.child.prompts)), strict=True))),
            (policy.resources, own.resources, {uri: self.uri(uri) for uri in own.resources}),
        ]
        for table, requirements, exported in copies:
            for original, requirement in requirements.items():
                name = exported.get(original)
                if name is not None and name not in table:
                    table[name] = requirement
                    self._guarded.append((table, name))


class Mounts:
    """An app's mounts, in the order they were mounted: what its handlers ask when a name
    or URI is not one of its own (each method answers None for "none of them has it")."""

    def __init__(self) -> None:
        self.mounts: list[Mount] = []

    def __bool__(self) -> bool:
        return bool(self.mounts)

    def add(self, parent: App, child: object, prefix: object, separator: object) -> None:
        """Mount ``child`` in ``parent`` (:meth:`McpApp.mount <typedmcp.app.core.McpApp.mount>`)."""
        if not isinstance(child, ServerHandlers) or not isinstance(getattr(child, "changes", None), ChangeFeed):
            raise DeclarationError(
                f"mount takes an McpApp, not {type(child).__name__}; another server (a command, "
                "a URL) is mounted as typedmcp.host.proxy_app(...)"
            )
        app = cast(App, child)
        prefix, separator = checked_prefix(prefix, separator)
        if app is parent or any(mount.child is app for mount in self.mounts):
            raise DeclarationError(f"app {app.name!r} is already mounted here (or is this app)")
        taken = next((mount for mount in self.mounts if mount.prefix == prefix), None)
        if taken is not None:
            raise DeclarationError(
                f"prefix {prefix!r} is already used by the mounted app {taken.child.name!r}; "
                "give this one another prefix"
            )
        self.mounts.append(Mount(parent, app, prefix, separator))
        for announce in (parent.changes.tools_changed, parent.changes.resources_changed,
                         parent.changes.prompts_changed):
            announce()

    async def tools(self, own: list[models.Tool], ctx: Ctx) -> list[models.Tool]:
        if not self.mounts:
            return own
        for mount in self.mounts:
            own = own + await mount.tools(ctx)
        return _first_of_each(own, "name")

    async def prompts(self, own: list[models.Prompt], ctx: Ctx) -> list[models.Prompt]:
        if not self.mounts:
            return own
        for mount in self.mounts:
            own = own + await mount.prompts(ctx)
        return _first_of_each(own, "name")

    async def resources(self, own: list[models.Resource], ctx: Ctx) -> list[models.Resource]:
        if not self.mounts:
            return own
        for mount in self.mounts:
            own = own + await mount.resources(ctx)
        return _first_of_each(own, "uri")

    async def templates(self, own: list[models.ResourceTemplate], ctx: Ctx) -> list[models.ResourceTemplate]:
        if not self.mounts:
            return own
        for mount in self.mounts:
            own = own + await mount.templates(ctx)
        return _first_of_each(own, "uri_template")

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult | None:
        for mount in self.mounts:
            name = await mount.tool_name(params.name, ctx)
            if name is not None:
                return await mount.child.call_tool(params.model_copy(update={"name": name}), ctx)
        return None

    async def get_prompt(self, params: models.GetPromptRequestParams, ctx: Ctx) -> models.GetPromptResult | None:
        for mount in self.mounts:
            name = await mount.prompt_name(params.name, ctx)
            if name is not None:
                return await mount.child.get_prompt(params.model_copy(update={"name": name}), ctx)
        return None

    async def read_resource(self, params: models.ReadResourceRequestParams, ctx: Ctx) -> models.ReadResourceResult | None:
        for mount in self.mounts:
            original = mount.original_uri(params.uri)
            if original is not None:
                return await mount.read(params, original, ctx)
        return None

    async def subscribe(self, params: models.SubscribeRequestParams, ctx: Ctx) -> models.Result | None:
        for mount in self.mounts:
            original = mount.original_uri(params.uri)
            if original is not None:
                return await mount.child.subscribe(params.model_copy(update={"uri": original}), ctx)
        return None

    async def complete(self, params: models.CompleteRequestParams, ctx: Ctx) -> models.CompleteResult | None:
        for mount in self.mounts:
            completed = await mount.complete(params, ctx)
            if completed is not None:
                return completed
        return None


def _first_of_each(items: list[T], key: str) -> list[T]:
    """``items`` without those whose ``key`` an earlier one has (a name the app declares
    itself, or an earlier mount exports, is served by that one)."""
    seen: set[Any] = set()
    kept = []
    for item in items:
        value = getattr(item, key)
        if value not in seen:
            seen.add(value)
            kept.append(item)
    return kept
