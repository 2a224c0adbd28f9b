"""mcp-codegen's runtime: serve and call generated MCP packages, both protocol eras.

The face, what a server script or a client imports::

    from typedmcp import McpApp, run_stdio, http_app, connect_stdio, connect_http, ToolError

Each name is imported on first use (``import typedmcp`` itself loads nothing else), from
the module that defines it. The layers below, each importing only from those under it:
``engine`` (JSON-RPC) < ``protocol`` (the typed seam; generated code imports its ``model``,
``spec`` and ``stubs``) < ``stateless`` (the 2026-07-28 server) < ``transports`` < ``auth``
< ``app`` (a server as typed functions, :class:`McpApp`) < the face (``connecting``,
``serving``, ``testing`` and its pytest plugin, this module) < ``host`` (many servers as one).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.4.0"

#: Public name -> the module (under typedmcp) that defines it.
_EXPORTS: dict[str, str] = {
    # launchers
    "connect": "connecting",
    "connect_direct": "connecting",
    "connect_http": "connecting",
    "connect_memory": "connecting",
    "connect_sse": "connecting",
    "connect_stdio": "connecting",
    "SseFallbackDisabled": "connecting",
    "http_app": "serving",
    "run_stdio": "serving",
    "serve": "serving",
    "serve_stdio": "serving",
    # the authoring layer: a server as typed functions
    "Context": "app.context",
    "DeclarationError": "app.signature",
    "McpApp": "app.core",
    # JSON-RPC errors
    "CapabilityError": "engine.jsonrpc",
    "ConnectionClosed": "engine.jsonrpc",
    "INTERNAL_ERROR": "engine.jsonrpc",
    "INVALID_PARAMS": "engine.jsonrpc",
    "INVALID_REQUEST": "engine.jsonrpc",
    "METHOD_NOT_FOUND": "engine.jsonrpc",
    "PARSE_ERROR": "engine.jsonrpc",
    "RpcError": "engine.jsonrpc",
    # handlers and clients
    "ChangeFeed": "protocol.feed",
    "ExtensionError": "protocol.extensions",
    "TASKS_EXTENSION": "protocol.extensions",
    "SKILLS_EXTENSION": "protocol.skills",
    "SkillCatalog": "protocol.skills",
    "SkillError": "protocol.skills",
    "load_skill": "protocol.skills",
    "SkillEntry": "protocol.skills_client",
    "SkillsClient": "protocol.skills_client",
    "SkillVerificationError": "protocol.skills_client",
    "supports_extension": "protocol.extensions",
    "extension_settings": "protocol.extensions",
    "InvalidResult": "protocol.results",
    "ProtocolViolation": "protocol.results",
    "RequestOrigin": "protocol.origin",
    "request_origin": "protocol.origin",
    "UnknownOptionError": "protocol.options",
    "NegotiationTimeout": "protocol.probing",
    "RequestContext": "protocol.stubs",
    "RequestOptions": "protocol.deadlines",
    "ToolError": "protocol.stubs",
    "ToolOutputError": "protocol.client",
    "VersionError": "protocol.packages",
    "HttpError": "protocol.errors",
    "AuthRequired": "protocol.errors",
    "NotAnMcpReply": "transports.http_client",
    "ResponseLost": "transports.http_client",
    "ServerUnreachable": "transports.http_wire",
    "TlsError": "transports.http_wire",
    "RedirectNotFollowed": "transports.http_wire",
    "ReplyTooLarge": "transports.http_wire",
    "HttpTimeouts": "transports.http_wire",
    # the stateless era
    "CachePolicy": "stateless.server",
    "MemoryUsedStates": "stateless.sealing",
    "UsedStates": "stateless.sealing",
    "input_key": "stateless.scope",
    "run_as_task": "stateless.tasks",
    "TaskCancelled": "protocol.task_client",
    "TaskState": "protocol.task_client",
    "ToolTask": "protocol.task_client",
    "ToolTasks": "protocol.task_client",
    "resumed_from_state": "stateless.scope",
    "single_use_state": "stateless.scope",
    # HTTP
    "HttpApp": "transports.http_server",
    "MemoryEventStore": "transports.events",
    "EventStore": "transports.events",
    "SsePaths": "transports.http_sse_server",
    "close_sse_stream": "transports.http_streams",
    "BearerAuth": "auth.bearer",
    "Principal": "protocol.origin",
    "OAuthProvider": "auth.oauth",
}

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SKILLS_EXTENSION",
    "TASKS_EXTENSION",
    "AuthRequired",
    "BearerAuth",
    "CachePolicy",
    "CapabilityError",
    "ChangeFeed",
    "ConnectionClosed",
    "Context",
    "DeclarationError",
    "EventStore",
    "ExtensionError",
    "HttpApp",
    "HttpError",
    "HttpTimeouts",
    "InvalidResult",
    "McpApp",
    "MemoryEventStore",
    "MemoryUsedStates",
    "NegotiationTimeout",
    "NotAnMcpReply",
    "OAuthProvider",
    "Principal",
    "ProtocolViolation",
    "RedirectNotFollowed",
    "ReplyTooLarge",
    "RequestContext",
    "RequestOptions",
    "RequestOrigin",
    "ResponseLost",
    "RpcError",
    "ServerUnreachable",
    "SkillCatalog",
    "SkillEntry",
    "SkillError",
    "SkillVerificationError",
    "SkillsClient",
    "SseFallbackDisabled",
    "SsePaths",
    "TaskCancelled",
    "TaskState",
    "TlsError",
    "ToolError",
    "ToolOutputError",
    "ToolTask",
    "ToolTasks",
    "UnknownOptionError",
    "UsedStates",
    "VersionError",
    "close_sse_stream",
    "connect",
    "connect_direct",
    "connect_http",
    "connect_memory",
    "connect_sse",
    "connect_stdio",
    "extension_settings",
    "http_app",
    "input_key",
    "load_skill",
    "request_origin",
    "resumed_from_state",
    "run_as_task",
    "run_stdio",
    "serve",
    "serve_stdio",
    "single_use_state",
    "supports_extension",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from .app.context import Context
    from .app.core import McpApp
    from .app.signature import DeclarationError
    from .auth.bearer import BearerAuth
    from .auth.oauth import OAuthProvider
    from .connecting import (
        SseFallbackDisabled,
        connect,
        connect_direct,
        connect_http,
        connect_memory,
        connect_sse,
        connect_stdio,
    )
    from .engine.jsonrpc import (
        INTERNAL_ERROR,
        INVALID_PARAMS,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        PARSE_ERROR,
        CapabilityError,
        ConnectionClosed,
        RpcError,
    )
    from .protocol.client import ToolOutputError
    from .protocol.probing import NegotiationTimeout
    from .protocol.errors import AuthRequired, HttpError
    from .protocol.extensions import (
        TASKS_EXTENSION,
        ExtensionError,
        extension_settings,
        supports_extension,
    )
    from .protocol.feed import ChangeFeed
    from .protocol.skills import SKILLS_EXTENSION, SkillCatalog, SkillError, load_skill
    from .protocol.skills_client import SkillEntry, SkillsClient, SkillVerificationError
    from .protocol.options import UnknownOptionError
    from .protocol.origin import Principal, RequestOrigin, request_origin
    from .protocol.packages import VersionError
    from .protocol.results import InvalidResult, ProtocolViolation
    from .protocol.stubs import RequestContext, ToolError
    from .protocol.task_client import TaskCancelled, TaskState, ToolTask, ToolTasks
    from .serving import http_app, run_stdio, serve, serve_stdio
    from .stateless.scope import input_key, resumed_from_state, single_use_state
    from .stateless.sealing import MemoryUsedStates, UsedStates
    from .stateless.server import CachePolicy
    from .stateless.tasks import run_as_task
    from .transports.events import EventStore, MemoryEventStore
    from .transports.http_client import NotAnMcpReply, ResponseLost
    from .transports.http_server import HttpApp
    from .transports.http_sse_server import SsePaths
    from .transports.http_streams import close_sse_stream
    from .protocol.deadlines import RequestOptions
    from .transports.http_wire import HttpTimeouts, RedirectNotFollowed, ReplyTooLarge, ServerUnreachable, TlsError
