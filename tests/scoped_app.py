"""The server the scope tests drive: typed tools, resources and prompts with ``scopes=`` and
``allow=``, a BearerAuth knowing a few test tokens, and a low-level ``ServerHandlers``
subclass declaring its scopes with a class-level :class:`AccessPolicy`."""

from __future__ import annotations

from typing import Any

from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers
from typedmcp import Context, McpApp, Principal, RequestContext
from typedmcp.auth.bearer import BearerAuth
from typedmcp.protocol.access import AccessPolicy, requires

ISSUER = "https://as.example.com"
READ, WRITE = "notes:read", "notes:write"


def principal(subject: str, *scopes: str, **claims: Any) -> Principal:
    return Principal(subject, issuer=ISSUER, client_id="test-client", scopes=frozenset(scopes), claims=claims)


#: test token -> what the verifier says it proves
TOKENS: dict[str, Principal] = {
    "reader": principal("alice", READ),
    "writer": principal("alice", READ, WRITE),  # alice again, stepped up: the same identity
    "nobody": principal("eve"),
    "admin": principal("root", READ, roles=["admin"]),
}


def bearer_auth(tokens: dict[str, Principal] | None = None) -> BearerAuth:
    table = TOKENS if tokens is None else tokens
    return BearerAuth(verify=table.get, resource_metadata={"authorization_servers": [ISSUER]})


def is_admin(who: Any) -> bool:
    return "admin" in who.claims.get("roles", ())


def build_app(**options: Any) -> McpApp:
    """A fresh app (each test its own, so declarations do not leak)."""
    app = McpApp("scoped", version="1.0.0", **options)

    @app.tool(scopes=[READ])
    def search(query: str) -> str:
        """Search the notes."""
        return f"found {query}"

    @app.tool(scopes=[WRITE])
    def add(title: str) -> str:
        """Add a note."""
        return f"added {title}"

    @app.tool(scopes=[WRITE])
    async def export(ctx: Context, count: int = 2) -> str:
        """Export, reporting progress (its reply streams)."""
        for step in range(count):
            await ctx.report_progress(step + 1, count)
        return "exported"

    @app.tool(allow=is_admin)
    def purge() -> str:
        """Only for admins (a claim, not a scope)."""
        return "purged"

    @app.tool()
    def hello() -> str:
        """Open to every caller."""
        return "hello"

    @app.resource("notes://index", scopes=[READ])
    def index() -> list[int]:
        """Every note id."""
        return [1, 2]

    @app.resource("notes://{note_id}", scopes=[READ])
    def note(note_id: int) -> str:
        """One note."""
        return f"note {note_id}"

    @app.resource("public://readme")
    def readme() -> str:
        """Anyone may read this."""
        return "readme"

    @app.prompt(scopes=[READ])
    def summarize(note_id: int, style: str = "short") -> str:
        """Summarize a note."""
        return f"summarize {note_id} ({style})"

    @summarize.complete("style")
    def styles(prefix: str) -> list[str]:
        return [s for s in ("short", "long") if s.startswith(prefix)]

    @app.prompt()
    def greet() -> str:
        """Open to every caller."""
        return "hi"

    return app


class LowLevel(ServerHandlers):
    """Hand-written handlers: the scopes are a class attribute."""

    access_policy = AccessPolicy(
        tools={"write": requires(WRITE), "admin_only": requires(allow=is_admin)},
        prompts={"secret": requires(READ)},
    )

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        schema = models.ToolInputSchema(type="object")
        return models.ListToolsResult(
            tools=[models.Tool(name=name, input_schema=schema) for name in ("read", "write", "admin_only")]
        )

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        return models.CallToolResult(content=[models.TextContent(type="text", text=f"did {params.name}")])

    async def list_prompts(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListPromptsResult:
        return models.ListPromptsResult(prompts=[models.Prompt(name="secret"), models.Prompt(name="open")])

    async def get_prompt(
        self, params: models.GetPromptRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.GetPromptResult:
        text = models.TextContent(type="text", text=params.name)
        return models.GetPromptResult(messages=[models.PromptMessage(role="user", content=text)])
