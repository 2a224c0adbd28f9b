"""An McpApp with a recording server middleware: every request and notification it sees is
kept, and the ``seen`` tool returns them (method, kind, era, version, transport, whether a
session id was there, the principal's subject, the ``x-audit`` header). A policy middleware
refuses ``echo`` of "secret" (-32001) and rewrites "shout" to "SHOUT". stdio by default;
``--port N`` serves Streamable HTTP (both eras) and HTTP+SSE, behind a BearerAuth that knows
one token (alice-token), or without auth with ``--open``."""

from __future__ import annotations

import argparse
from typing import Any

from typedmcp import McpApp, Principal, RpcError, http_app, run_stdio
from typedmcp.auth.bearer import BearerAuth
from typedmcp.protocol.middleware import CallNext, MiddlewareContext

SEEN: list[dict[str, Any]] = []


async def record(ctx: MiddlewareContext, call_next: CallNext) -> Any:
    if ctx.tool_name != "seen":
        SEEN.append(
            {
                "method": ctx.method, "kind": ctx.kind, "era": ctx.era,
                "version": ctx.protocol_version, "transport": ctx.transport,
                "has_session": ctx.session_id is not None, "subject": ctx.subject,
                "audit": ctx.headers.get("x-audit"), "arguments": ctx.arguments,
            }
        )
    return await call_next(ctx)


async def policy(ctx: MiddlewareContext, call_next: CallNext) -> Any:
    text = (ctx.arguments or {}).get("text")
    if ctx.tool_name == "echo" and text == "secret":
        raise RpcError(-32001, "Forbidden: echo may not say that")
    if ctx.tool_name == "echo" and text == "shout":
        ctx.params = {**ctx.params, "arguments": {"text": "SHOUT"}}
    return await call_next(ctx)


app = McpApp("middleware", version="1.0.0", middleware=[record, policy])


@app.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


@app.tool()
def seen() -> list[dict[str, Any]]:
    """What the recording middleware saw so far (and forget it)."""
    found = list(SEEN)
    SEEN.clear()
    return found


def verify(token: str) -> Principal | None:
    return Principal("alice", issuer="https://auth.example") if token == "alice-token" else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int)
    parser.add_argument("--open", action="store_true")
    args = parser.parse_args()
    if args.port is None:
        run_stdio(app)
        return
    import uvicorn

    metadata = {"resource": f"http://127.0.0.1:{args.port}/mcp", "authorization_servers": ["https://auth.example"]}
    auth = None if args.open else BearerAuth(verify, metadata)
    uvicorn.run(http_app(app, auth=auth, legacy_sse=True), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
