"""Mounting :class:`~typedmcp.transports.http_server.HttpApp` under a prefix of a larger ASGI
app (``api.mount("/tools", mcp)`` in Starlette or FastAPI): the request path below the
``root_path``, the protected-resource metadata where RFC 9728 puts it for the mounted
endpoint (a route of the outer app), and the app's lifespan for an outer app to run
(Starlette does not run a mounted app's lifespan)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from .asgi import Receive, Scope, Send, respond_json


class Mountable:
    """What :class:`~typedmcp.transports.http_server.HttpApp` offers an app that mounts it."""

    path: str
    auth: Any  # a BearerCheck, or None

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def start(self) -> None:
        """The app's start-up (``HttpApp.start``)."""
        raise NotImplementedError

    async def stop(self) -> None:
        """The app's shut-down (``HttpApp.stop``)."""
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def lifespan(self, outer_app: object = None) -> AsyncIterator[None]:
        """This app's start-up and shut-down around the outer app's life, for an app that
        mounts it: Starlette and FastAPI do not run a mounted app's lifespan.
        ``FastAPI(lifespan=mcp.lifespan)``; with a lifespan of your own, enter it inside
        yours: ``async with mcp.lifespan(app): yield``."""
        await self.start()
        try:
            yield
        finally:
            await self.stop()

    # -- mounting ---------------------------------------------------------------------------

    def public_metadata_path(self, prefix: str = "") -> str:
        """Where RFC 9728 puts the protected-resource metadata of this endpoint mounted at
        ``prefix``: on the outer app, ``/.well-known/oauth-protected-resource<prefix><path>``."""
        prefix = prefix.rstrip("/")
        return "/.well-known/oauth-protected-resource" + (
            (prefix + self.path) if self.path != "/" else (prefix or "")
        )

    def protected_resource_route(self, prefix: str) -> tuple[str, MetadataEndpoint]:
        """The path and ASGI app of the protected-resource metadata document of this app
        mounted at ``prefix``, for the outer app to route (a mounted app sees only requests
        under its prefix; RFC 9728 puts the document at the host's root):
        ``api.add_route(*mcp.protected_resource_route("/tools"))``."""
        if self.auth is None:
            raise ValueError(
                "protected_resource_route needs auth: build the app with "
                "http_app(..., auth=BearerAuth(verify, resource_metadata))"
            )
        if prefix and not prefix.startswith("/"):
            raise ValueError(f"the mount prefix must start with '/' (got {prefix!r})")
        prefix = prefix.rstrip("/")
        return self.public_metadata_path(prefix), MetadataEndpoint(self, prefix)

    def metadata_document(self, scope: Scope, headers: dict[str, str], prefix: str) -> dict[str, Any]:
        """The protected-resource metadata document; without a ``resource`` of its own, the
        endpoint's URL as this request reached it (the mount prefix included)."""
        assert self.auth is not None
        document: dict[str, Any] = self.auth.resource_metadata
        if "resource" in document:
            return document
        return {"resource": origin_of(scope, headers) + prefix + self.path, **document}

class MetadataEndpoint:
    """The ASGI app of the metadata document of ``app`` mounted at ``prefix``, routed by the
    outer app. (An object, not a function: Starlette's ``Route`` passes a function a
    ``Request`` but calls any other endpoint as an ASGI app.)"""

    def __init__(self, app: Mountable, prefix: str) -> None:
        self.app, self.prefix = app, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        prefix = mount_prefix(scope) + self.prefix  # (the outer app's own root_path first)
        await respond_json(send, 200, self.app.metadata_document(scope, headers, prefix))


def mount_prefix(scope: Scope) -> str:
    """The path this app is mounted at (the ASGI ``root_path``), without a trailing slash."""
    return str(scope.get("root_path", "")).rstrip("/")


def route_path(path: str, root: str) -> str:
    """The request path below the mount prefix ``root``, without a trailing slash. ASGI
    servers and Starlette's ``Mount`` keep ``root_path`` in ``path``; older Starlette cut it
    off (a path that does not start with the prefix is taken as it is)."""
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        path = path[len(root):]
    return path.rstrip("/") or "/"


def origin_of(scope: Scope, headers: dict[str, str]) -> str:
    """``scheme://host`` of a request, as the client addressed it."""
    return f"{scope.get('scheme', 'http')}://{headers.get('host', 'localhost')}"
