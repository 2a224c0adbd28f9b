"""An McpApp whose tools tell the request's principal and headers (``ctx.principal``,
``ctx.headers``): stdio by default; ``--port N`` serves Streamable HTTP (both eras) behind a
BearerAuth that knows two tokens (alice-token, bob-token) and ``--sse`` adds HTTP+SSE."""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer
from typedmcp import Context, McpApp, RequestContext, http_app, request_origin, run_stdio
from typedmcp.auth.bearer import BearerAuth


class Identity(BaseModel):
    """Who asked, and what the handler saw of the HTTP request."""

    principal: str | None
    tenant: str | None
    sees_authorization: bool
    header_count: int


class PrincipalApp(McpApp):
    """The typed tools plus ``whoami_lowlevel``, a hand-written handler reading the origin
    with ``request_origin()`` (what a low-level ``ServerHandlers`` subclass uses)."""

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        typed = await super().list_tools(params, ctx)
        lowlevel = models.Tool(name="whoami_lowlevel", input_schema=models.ToolInputSchema(type="object"))
        return models.ListToolsResult(tools=[*typed.tools, lowlevel])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        if params.name != "whoami_lowlevel":
            return await super().call_tool(params, ctx)
        origin = request_origin()
        headers = origin.headers if origin is not None else {}
        seen = Identity(
            principal=str(origin.principal) if origin is not None and origin.principal is not None else None,
            tenant=headers.get("x-tenant"),
            sees_authorization="authorization" in headers,
            header_count=len(headers),
        )
        dumped = seen.model_dump()
        return models.CallToolResult(
            content=[models.TextContent(type="text", text=seen.model_dump_json())], structured_content=dumped
        )


app = PrincipalApp("principal", version="1.0.0")
USERS = {"alice-token": "alice", "bob-token": "bob"}


def identity(ctx: Context) -> Identity:
    """The identity a Context gives (the same for async and sync tools)."""
    headers = ctx.headers
    return Identity(
        principal=ctx.principal_as(str),
        tenant=headers.get("x-tenant"),
        sees_authorization="authorization" in headers,
        header_count=len(headers),
    )


@app.tool()
async def whoami(ctx: Context) -> Identity:
    """Who is asking (an async tool, on the event loop)."""
    return identity(ctx)


@app.tool()
def whoami_sync(ctx: Context) -> Identity:
    """Who is asking (a sync tool, in a worker thread)."""
    return identity(ctx)


def verify(token: str) -> str | None:
    """The user a token stands for."""
    return USERS.get(token)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int)
    parser.add_argument("--sse", action="store_true")
    args = parser.parse_args()
    if args.port is None:
        run_stdio(app)
        return
    import uvicorn

    metadata = {"resource": f"http://127.0.0.1:{args.port}/mcp", "authorization_servers": ["https://auth.example"]}
    asgi = http_app(app, auth=BearerAuth(verify, metadata), legacy_sse=args.sse)
    uvicorn.run(asgi, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
