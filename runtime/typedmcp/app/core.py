""":class:`McpApp`: a server written as typed functions, served by the runtime unchanged.

The app *is* a generated ``ServerHandlers`` (2025-11-25) whose handlers dispatch to the
declared functions, so ``run_stdio(app)``, ``http_app(app)`` and the in-process connectors
serve it to every revision and both eras, as any handler object; what a revision cannot
express (``outputSchema`` before 2025-06-18, ``title``, ``icons``...) is dropped for it by
the runtime's sieve. Subclass it to add low-level handlers beside the functions
(``subscribe``, or ``call_tool`` with ``super().call_tool(...)`` as the fallback).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, ParamSpec, TypeVar, overload

from typing_extensions import Self

from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

from ..engine.jsonrpc import INVALID_PARAMS, RpcError, clip
from ..protocol.access import AccessPolicy, Allow, Requirement
from ..protocol.apps import UiCsp
from ..protocol.extensions import checked_extensions
from ..protocol.feed import ChangeFeed
from ..protocol.middleware import Middleware, MiddlewareChain
from ..protocol.options import check_call
from ..protocol.skills import Skill, SkillCatalog
from ..protocol.stubs import RequestContext
from ..stateless.server import CachePolicy
from ..stateless.tasks import TaskSupport, run_as_task
from .context import Context
from .declared import PromptFunction, ResourceFunction
from .mount import Mounts
from .prompts import PromptSpec, declare_prompt
from .resources import RESOURCE_NOT_FOUND, ResourceSpec, declare_resource
from .signature import DeclarationError
from .skills import add_skill
from .tools import ToolSpec, declare_tool
from .ui import UiLink, declare_ui_resource, tool_meta_with_ui

P = ParamSpec("P")
R = TypeVar("R")
Ctx = RequestContext[ClientPeer]


#: What :meth:`McpApp.enable` and :meth:`McpApp.disable` act on.
Kind = Literal["tool", "prompt", "resource"]
SpecT = TypeVar("SpecT")

#: The lists whose changes the app announces (``listChanged`` in its capabilities).
LIST_CHANGED = ("tools", "resources", "prompts")


class McpApp(ServerHandlers):
    """A server made of typed functions::

        app = McpApp("notes", version="1.0.0")

        @app.tool()
        def add(a: int, b: int) -> int:
            \"\"\"Add two numbers.\"\"\"
            return a + b

        run_stdio(app)

    Every declaration is checked when it is made (:class:`DeclarationError`); an unknown
    keyword (``McpApp("notes", server_inf=...)``) raises
    :class:`~typedmcp.protocol.options.UnknownOptionError` naming the closest valid one.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        # Python's own error for an unexpected keyword names no fix: check the keywords
        # against the (sub)class's __init__ first. (mypy types the call by __init__.)
        check_call(cls.__name__, cls.__init__, kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        changes: ChangeFeed | None = None,
        cache: CachePolicy | None = None,
        hide_unauthorized: bool = True,
        implied_scopes: Mapping[str, Iterable[str]] | None = None,
        middleware: Sequence[Middleware] = (),
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
        mask_errors: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise DeclarationError("McpApp needs a name: McpApp('notes', version='1.0.0')")
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        #: The caching hints of 2026-07-28 list and read results (``ttlMs``/``cacheScope``).
        self.cache = cache
        #: The extensions the app declares (SEP-2133; on the wire in 2026-07-28).
        self.extensions = checked_extensions(extensions)
        #: Where run-time changes are published; the launchers serve the app with it.
        self.changes = changes if changes is not None else ChangeFeed()
        #: An unexpected exception of a tool is the result "Internal error in tool NAME"
        #: (logged with its traceback here) instead of its type and message; a
        #: ``ToolError``'s message is sent either way.
        self.mask_errors = mask_errors
        #: The server middleware, outermost first (see :meth:`add_middleware`).
        self.middleware = MiddlewareChain(middleware)
        self._tools: dict[str, ToolSpec] = {}
        self._task_tools: dict[str, TaskSupport] = {}  # tool name -> how it runs as a task
        self._resources: dict[str, ResourceSpec] = {}
        self._templates: dict[str, ResourceSpec] = {}
        self._prompts: dict[str, PromptSpec] = {}
        self._disabled: set[tuple[str, str]] = set()
        #: The skills the app serves (:meth:`add_skill_directory`; SEP-2640).
        self.skill_catalog: SkillCatalog | None = None
        #: The scopes and predicates of the declarations (``scopes=``, ``allow=``), which
        #: the runtime enforces for authenticated callers (see ``typedmcp.protocol.access``);
        #: ``hide_unauthorized``: lists leave out what the caller's token may not use;
        #: ``implied_scopes``: broader scopes and the narrower ones each grants too.
        self.access_policy = AccessPolicy(hide_unauthorized=hide_unauthorized, implied_scopes=implied_scopes or {})
        #: The loop serving the app (seen by its handlers): changes made in a worker
        #: thread (a sync tool adding a tool) are announced on it.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._mounts = Mounts()  # the apps mounted in this one (:meth:`mount`)

    def _announce(self, publish: Callable[[], None]) -> None:
        """Publish a list change on the feed, from the serving loop's thread (the feed's
        listeners and its Redis relay run there)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a worker thread (or no loop at all: declarations at import)
            loop = self._loop
            if loop is not None and loop.is_running():
                loop.call_soon_threadsafe(publish)
                return
        publish()

    def server_defaults(self) -> dict[str, Any]:
        """Options the launchers use unless given others: ``server_info``,
        ``instructions``, ``list_changed``, ``extensions`` and the app's change feed."""
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        defaults: dict[str, Any] = {
            "server_info": info,
            "list_changed": LIST_CHANGED,
            "changes": self.changes,
        }
        if self.instructions is not None:
            defaults["instructions"] = self.instructions
        if self.cache is not None:
            defaults["cache"] = self.cache
        if self.middleware.middlewares:
            defaults["middleware"] = self.middleware
        if self.extensions:
            defaults["extensions"] = self.extensions
        return defaults

    def add_middleware(self, middleware: Middleware) -> None:
        """Add a server middleware (``async def mw(ctx, call_next)``), inside those added
        before it: it runs around every request and notification the app receives, in
        both eras and on every transport. Add them before serving; a launcher's own
        ``middleware=`` replaces the app's."""
        self.middleware.add(middleware)

    def mount(self, app: McpApp, *, prefix: str, separator: str = "_") -> None:
        """Serve ``app``'s tools, resources, templates and prompts here under ``prefix``: see
        :mod:`typedmcp.app.mount` (names, URIs, list changes, scopes; mount before serving)."""
        self._mounts.add(self, app, prefix, separator)

    # -- declaring -----------------------------------------------------------------------

    @overload
    def tool(self, function: Callable[P, R], /) -> Callable[P, R]: ...
    @overload
    def tool(
        self,
        function: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: models.ToolAnnotations | Mapping[str, Any] | None = None,
        icons: Sequence[models.Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        scopes: Sequence[str] | None = None,
        allow: Allow | None = None,
        task: TaskSupport | None = None,
        ui: str | UiLink | None = None,
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...
    def tool(
        self,
        function: Callable[P, R] | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: models.ToolAnnotations | Mapping[str, Any] | None = None,
        icons: Sequence[models.Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        scopes: Sequence[str] | None = None,
        allow: Allow | None = None,
        task: TaskSupport | None = None,
        ui: str | UiLink | None = None,
    ) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
        """Declare a tool (``@app.tool()`` or ``@app.tool``); the function is returned
        unchanged. The name defaults to the function's, the description to the
        docstring's first paragraph; ``structured_output=False`` leaves out the output
        schema. ``scopes``: the OAuth scopes a caller's token needs to call it; ``allow``:
        a predicate on the caller's principal (claims, roles) that must hold too (enforced
        over HTTP with ``auth``; see ``typedmcp.protocol.access``).
        ``task="optional"`` (or ``"required"``) runs it as a task of the tasks
        extension for a 2026-07-28 client that declares it (``McpApp(extensions=
        {TASKS_EXTENSION: {}})``); ``"required"`` refuses other clients of that era (-32021).
        ``ui``: the ``ui://`` resource (or :class:`~typedmcp.app.ui.UiLink`) of its MCP Apps UI
        (``_meta.ui``)."""
        if isinstance(function, str):
            raise DeclarationError(
                f"write @app.tool(name={function!r}): the name is a keyword argument"
            )
        if function is not None:
            return self.add_tool(function)

        def decorator(declared: Callable[P, R]) -> Callable[P, R]:
            return self.add_tool(
                declared, name=name, title=title, description=description,
                annotations=annotations, icons=icons, meta=meta,
                structured_output=structured_output, scopes=scopes, allow=allow, task=task, ui=ui,
            )

        return decorator

    def add_tool(
        self,
        function: Callable[P, R],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: models.ToolAnnotations | Mapping[str, Any] | None = None,
        icons: Sequence[models.Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        scopes: Sequence[str] | None = None,
        allow: Allow | None = None,
        task: TaskSupport | None = None,
        ui: str | UiLink | None = None,
    ) -> Callable[P, R]:
        """Declare ``function`` as a tool (what ``@app.tool()`` does); returns it."""
        requirement = _requirement("tool", scopes, allow)
        if task not in (None, "optional", "required"):
            raise DeclarationError(
                f"task={task!r}: a tool runs as a task with task='optional' or task='required'"
            )
        spec = declare_tool(
            function, name=name, title=title, description=description, annotations=annotations,
            icons=icons, meta=tool_meta_with_ui(meta, ui, function), structured_output=structured_output,
        )
        if spec.name in self._tools:
            raise DeclarationError(
                f"tool {spec.name!r} is declared twice (by "
                f"{getattr(self._tools[spec.name].function, '__qualname__', '?')} and "
                f"{getattr(function, '__qualname__', '?')}); give one another name with name='...'"
            )
        self._tools[spec.name] = spec
        _guard(self.access_policy.tools, spec.name, requirement)
        self._task_tools.pop(spec.name, None)
        if task is not None:
            self._task_tools[spec.name] = task
        self._announce(self.changes.tools_changed)
        return function

    def add_skill_directory(self, folder: str | Path) -> Skill:
        """Serve the skill in ``folder`` (its SKILL.md and files) with the skills extension
        (SEP-2640, 2026-07-28); its files are resources in both eras (:mod:`.skills`)."""
        return add_skill(self, folder)

    def remove_tool(self, name: str) -> None:
        """Stop serving tool ``name`` (clients are told the list changed)."""
        if self._tools.pop(name, None) is None:
            raise KeyError(f"no tool named {name!r} (tools: {', '.join(self._tools) or 'none'})")
        self._disabled.discard(("tool", name))
        self.access_policy.tools.pop(name, None)
        self._announce(self.changes.tools_changed)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: Sequence[models.Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        allow: Allow | None = None,
    ) -> Callable[[Callable[P, R]], ResourceFunction[P, R]]:
        """Declare a resource (``"notes://index"``) or, with ``{variables}``, a resource
        template (``"notes://{note_id}"``) whose variables are the function's parameters."""
        if callable(uri):
            raise DeclarationError(
                f"write @app.resource('scheme://...') with the URI (got the function "
                f"{getattr(uri, '__qualname__', uri)!r})"
            )

        def decorator(function: Callable[P, R]) -> ResourceFunction[P, R]:
            return self.add_resource(
                function, uri, name=name, title=title, description=description,
                mime_type=mime_type, icons=icons, meta=meta, scopes=scopes, allow=allow,
            )

        return decorator

    def add_resource(
        self,
        function: Callable[P, R],
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: Sequence[models.Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        allow: Allow | None = None,
    ) -> ResourceFunction[P, R]:
        """Declare ``function`` as the resource (or template) ``uri``; ``scopes`` and
        ``allow`` guard reading it (a template: every URI it matches) as for a tool."""
        requirement = _requirement("resource", scopes, allow)
        spec = declare_resource(
            function, uri, name=name, title=title, description=description,
            mime_type=mime_type, icons=icons, meta=meta,
        )
        return self._register_resource(function, spec, requirement)

    def ui_resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: UiCsp | None = None,
        permissions: Sequence[str] = (),
        domain: str | None = None,
        prefers_border: bool | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        allow: Allow | None = None,
    ) -> Callable[[Callable[P, R]], ResourceFunction[P, R]]:
        """Declare an MCP Apps UI resource (``"ui://notes/board"``): the function returns its
        HTML, served as ``text/html;profile=mcp-app`` with the sandbox it asks for in
        ``_meta.ui`` (``csp``, ``permissions`` such as ``"clipboardWrite"``, ``domain``,
        ``prefers_border``); link tools to it with ``@app.tool(ui=uri)``."""
        if callable(uri):
            raise DeclarationError("write @app.ui_resource('ui://...') with the URI")

        def decorator(function: Callable[P, R]) -> ResourceFunction[P, R]:
            spec = declare_ui_resource(
                function, uri, name=name, title=title, description=description, csp=csp,
                permissions=permissions, domain=domain, prefers_border=prefers_border, meta=meta,
            )
            return self._register_resource(function, spec, _requirement("resource", scopes, allow))

        return decorator

    def _register_resource(
        self, function: Callable[P, R], spec: ResourceSpec, requirement: Requirement | None
    ) -> ResourceFunction[P, R]:
        uri = spec.uri
        table = self._templates if spec.template is not None else self._resources
        if uri in table:
            raise DeclarationError(
                f"resource {uri!r} is declared twice (by "
                f"{getattr(table[uri].function, '__qualname__', '?')} and "
                f"{getattr(function, '__qualname__', '?')}); keep one"
            )
        table[uri] = spec
        _guard(self.access_policy.resources, uri, requirement)
        self._announce(self.changes.resources_changed)
        return ResourceFunction(function, spec)

    def remove_resource(self, uri: str) -> None:
        """Stop serving resource (or template) ``uri`` (clients are told)."""
        if self._resources.pop(uri, None) is None and self._templates.pop(uri, None) is None:
            raise KeyError(f"no resource or template {uri!r}")
        self._disabled.discard(("resource", uri))
        self.access_policy.resources.pop(uri, None)
        self._announce(self.changes.resources_changed)

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[models.Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        allow: Allow | None = None,
    ) -> Callable[[Callable[P, R]], PromptFunction[P, R]]:
        """Declare a prompt; its arguments are the function's parameters. It may return a
        str (one user message), messages (``user(...)``, ``assistant(...)``) or a list."""
        if callable(name):
            raise DeclarationError("write @app.prompt() with parentheses (or pass name='...')")

        def decorator(function: Callable[P, R]) -> PromptFunction[P, R]:
            return self.add_prompt(
                function, name=name, title=title, description=description, icons=icons, meta=meta,
                scopes=scopes, allow=allow,
            )

        return decorator

    def add_prompt(
        self,
        function: Callable[P, R],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[models.Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        allow: Allow | None = None,
    ) -> PromptFunction[P, R]:
        """Declare ``function`` as a prompt (what ``@app.prompt()`` does); ``scopes`` and
        ``allow`` guard getting it and completing its arguments."""
        requirement = _requirement("prompt", scopes, allow)
        spec = declare_prompt(function, name=name, title=title, description=description, icons=icons, meta=meta)
        if spec.name in self._prompts:
            raise DeclarationError(
                f"prompt {spec.name!r} is declared twice (by "
                f"{getattr(self._prompts[spec.name].function, '__qualname__', '?')} and "
                f"{getattr(function, '__qualname__', '?')}); give one another name with name='...'"
            )
        self._prompts[spec.name] = spec
        _guard(self.access_policy.prompts, spec.name, requirement)
        self._announce(self.changes.prompts_changed)
        return PromptFunction(function, spec)

    def remove_prompt(self, name: str) -> None:
        """Stop serving prompt ``name`` (clients are told)."""
        if self._prompts.pop(name, None) is None:
            raise KeyError(f"no prompt named {name!r}")
        self._disabled.discard(("prompt", name))
        self.access_policy.prompts.pop(name, None)
        self._announce(self.changes.prompts_changed)

    def enable(self, kind: Kind, name: str, enabled: bool = True) -> None:
        """Serve (``enabled=True``) or hide a declared tool, prompt or resource (by URI) at
        run time; clients are told the list changed. A hidden one is not listed and is
        answered as unknown."""
        table: Mapping[str, object]
        if kind == "tool":
            table = self._tools
        elif kind == "prompt":
            table = self._prompts
        else:
            table = {**self._resources, **self._templates}
        if name not in table:
            raise KeyError(f"no {kind} {name!r} (declared: {', '.join(table) or 'none'})")
        key = (kind, name)
        if enabled == (key not in self._disabled):
            return
        if enabled:
            self._disabled.discard(key)
        else:
            self._disabled.add(key)
        self._announce(
            {"tool": self.changes.tools_changed, "prompt": self.changes.prompts_changed,
             "resource": self.changes.resources_changed}[kind]
        )

    def disable(self, kind: Kind, name: str) -> None:
        """``enable(kind, name, False)``: hide a tool, prompt or resource at run time."""
        self.enable(kind, name, False)

    def _served(self, kind: Kind, table: Mapping[str, SpecT]) -> list[SpecT]:
        disabled = self._disabled
        if not disabled:
            return list(table.values())
        return [spec for name, spec in table.items() if (kind, name) not in disabled]

    def _find(self, kind: Kind, table: Mapping[str, SpecT], name: str) -> SpecT | None:
        spec = table.get(name)
        return None if spec is None or (kind, name) in self._disabled else spec

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """The declared tools by name (disabled ones included)."""
        return dict(self._tools)

    @property
    def prompts(self) -> Mapping[str, PromptSpec]:
        """The declared prompts by name (disabled ones included)."""
        return dict(self._prompts)

    @property
    def resources(self) -> Mapping[str, ResourceSpec]:
        """The declared resources and templates by URI (disabled ones included)."""
        return {**self._resources, **self._templates}

    # -- serving (the generated handlers) -----------------------------------------------

    async def list_tools(self, params: models.PaginatedRequestParams | None, ctx: Ctx) -> models.ListToolsResult:
        return models.ListToolsResult(tools=await self._mounts.tools([spec.definition for spec in self._served("tool", self._tools)], ctx))

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        self._loop = asyncio.get_running_loop()
        spec = self._find("tool", self._tools, params.name)
        if spec is None:
            if self._mounts and (mounted := await self._mounts.call_tool(params, ctx)) is not None:
                return mounted
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {clip(params.name)}")
        context = Context(ctx) if spec.signature.context_parameter is not None else None
        support = self._task_tools.get(spec.name)
        if support is None:
            return await spec.call(params.arguments or {}, context, self.mask_errors)
        return await run_as_task(
            lambda: spec.call(params.arguments or {}, context, self.mask_errors), required=support == "required"
        )

    async def list_resources(self, params: models.PaginatedRequestParams | None, ctx: Ctx) -> models.ListResourcesResult:
        return models.ListResourcesResult(resources=await self._mounts.resources([spec.definition for spec in self._served("resource", self._resources)], ctx))  # type: ignore[misc]

    async def list_resource_templates(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListResourceTemplatesResult:
        return models.ListResourceTemplatesResult(
            resource_templates=await self._mounts.templates([spec.definition for spec in self._served("resource", self._templates)], ctx)  # type: ignore[misc]
        )

    async def read_resource(self, params: models.ReadResourceRequestParams, ctx: Ctx) -> models.ReadResourceResult:
        self._loop = asyncio.get_running_loop()
        uri = params.uri
        spec = self._find("resource", self._resources, uri)
        if spec is not None:
            return await spec.read(uri, {}, Context(ctx))
        for template in self._served("resource", self._templates):
            assert template.template is not None
            variables = template.template.match(uri)
            if variables is not None:
                return await template.read(uri, variables, Context(ctx))
        if self._mounts and (mounted := await self._mounts.read_resource(params, ctx)) is not None:
            return mounted
        raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {clip(uri)}", {"uri": uri})

    def _serves(self, uri: str) -> bool:
        if self._find("resource", self._resources, uri) is not None:
            return True
        return any(
            template.template is not None and template.template.match(uri) is not None
            for template in self._served("resource", self._templates)
        )

    async def subscribe(self, params: models.SubscribeRequestParams, ctx: Ctx) -> models.Result:
        """The runtime keeps the session's subscriptions; the app checks the URI is one
        it serves (``resource_updated`` then reaches the subscribers)."""
        if not self._serves(params.uri):
            if self._mounts and (mounted := await self._mounts.subscribe(params, ctx)) is not None:
                return mounted
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {clip(params.uri)}", {"uri": params.uri})
        return models.Result()

    async def unsubscribe(self, params: models.UnsubscribeRequestParams, ctx: Ctx) -> models.Result:
        return models.Result()

    def resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed (``resources/updated``,
        in both eras; from any thread)."""
        self._announce(lambda: self.changes.resource_updated(uri))

    async def list_prompts(self, params: models.PaginatedRequestParams | None, ctx: Ctx) -> models.ListPromptsResult:
        return models.ListPromptsResult(prompts=await self._mounts.prompts([spec.definition for spec in self._served("prompt", self._prompts)], ctx))

    async def get_prompt(self, params: models.GetPromptRequestParams, ctx: Ctx) -> models.GetPromptResult:
        self._loop = asyncio.get_running_loop()
        spec = self._find("prompt", self._prompts, params.name)
        if spec is None:
            if self._mounts and (mounted := await self._mounts.get_prompt(params, ctx)) is not None:
                return mounted
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown prompt {clip(params.name)}")
        return await spec.render(params.arguments or {}, Context(ctx))

    async def complete(self, params: models.CompleteRequestParams, ctx: Ctx) -> models.CompleteResult:
        ref = params.ref
        if isinstance(ref, models.PromptReference):
            prompt = self._find("prompt", self._prompts, ref.name)
            if prompt is None:
                if self._mounts and (mounted := await self._mounts.complete(params, ctx)) is not None:
                    return mounted
                raise RpcError(INVALID_PARAMS, f"Invalid params: unknown prompt {clip(ref.name)}")
            completions = prompt.completions
        else:
            template = self._find("resource", self._templates, ref.uri)
            if template is None:
                if self._mounts and (mounted := await self._mounts.complete(params, ctx)) is not None:
                    return mounted
                raise RpcError(INVALID_PARAMS, f"Invalid params: unknown resource template {clip(ref.uri)}")
            completions = template.completions
        return await completions.complete(params.argument.name, params.argument.value)


def _requirement(kind: str, scopes: Sequence[str] | None, allow: Allow | None) -> Requirement | None:
    """A declaration's ``scopes=`` and ``allow=``, checked (:class:`DeclarationError`)."""
    try:
        return Requirement.of(scopes, allow)
    except (TypeError, ValueError) as error:
        raise DeclarationError(f"{kind} scopes=/allow=: {error}") from None


def _guard(table: dict[str, Requirement], key: str, requirement: Requirement | None) -> None:
    if requirement is not None:
        table[key] = requirement
