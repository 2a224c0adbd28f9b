"""An McpApp whose tools tell the request's principal and headers (``ctx.principal``,
``ctx.headers``): stdio by default; ``--port N`` serves Streamable HTTP (both eras) behind a
BearerAuth that knows two tokens (alice-token, bob-token) and ``--sse`` adds HTTP+SSE."""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from typedmcp import Context, McpApp, http_app, run_stdio
from typedmcp.auth.bearer import BearerAuth


class Identity(BaseModel):
    """Who asked, and what the handler saw of the HTTP request."""

    principal: str | None
    tenant: str | None
    sees_authorization: bool
    header_count: int


app = McpApp("principal", version="1.0.0")
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
