"""The host: connect N MCP servers, merge their tools into one registry, route calls,
refresh on changes, survive failures, and serve everything as one gateway server; or serve
one server in process as an ``McpApp`` (:func:`proxy_app`).

``async with Host.from_config("mcp.json") as host: await host.call_tool("weather__now", {})``
"""

from .changes import Change, ChangeStream
from .config import ConfigError, HostConfig, ServerConfig, load_config, parse_config
from .core import Host
from .discovery import Discovery, ToolMatch
from .errors import HostError, InvalidArguments, ServerTimeout, ServerUnavailable, UnknownTool
from .naming import NamingRule, valid_function_name
from .proxy import ProxyApp, proxy_app
from .registry import PromptEntry, Registry, ResourceEntry, TemplateEntry, ToolEntry

__all__ = [
    "Change",
    "ChangeStream",
    "ConfigError",
    "Discovery",
    "Host",
    "HostConfig",
    "HostError",
    "InvalidArguments",
    "NamingRule",
    "PromptEntry",
    "ProxyApp",
    "Registry",
    "ResourceEntry",
    "ServerConfig",
    "ServerTimeout",
    "ServerUnavailable",
    "TemplateEntry",
    "ToolEntry",
    "ToolMatch",
    "UnknownTool",
    "load_config",
    "parse_config",
    "proxy_app",
    "valid_function_name",
]
