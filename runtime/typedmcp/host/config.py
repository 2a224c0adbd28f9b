"""The host's configuration: the ``mcpServers`` JSON of desktop hosts and editors, or a dict.

One entry per server::

    {"mcpServers": {
        "weather": {"command": "python", "args": ["weather.py"], "env": {"KEY": "${KEY}"}},
        "search":  {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    }}

Every string may use ``${VAR}`` (or ``${VAR:-default}``) from the environment; ``$$`` is a
literal ``$``. The whole configuration is checked before anything starts: an unknown key, a
missing command, a bad URL or an unset variable is a :class:`ConfigError` naming the server
and the field (an unknown key with the accepted key it is closest to), and, for a file, the
file's path. A file's servers are under ``mcpServers`` (or VS Code's ``servers``); a file
without either, or with a top-level key that looks like a misspelling of one of them or of
``host``, is refused naming that key. Other top-level keys (another application's settings
in the same file) are left alone.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: transport names accepted in ``type``/``transport`` -> the one the host uses
TRANSPORTS = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}
SERVER_KEYS = {
    "command": "the program to start (stdio)",
    "args": "its arguments (stdio)",
    "env": "extra environment variables (stdio)",
    "cwd": "its working directory (stdio)",
    "url": "the server's URL (http, sse)",
    "headers": "HTTP headers sent with every request (http, sse)",
    "maxReplyBytes": "the largest reply (JSON body or SSE event) read from the server, bytes (http, sse; default 64 MiB)",
    "type": "stdio, http or sse",
    "transport": "same as type",
    "disabled": "true: not started",
    "timeout": "seconds a call may take (default 60)",
    "resetTimeoutOnProgress": "true: each progress notification of a call gives it timeout seconds more",
    "maxTotalTimeout": "with resetTimeoutOnProgress, the most seconds a call may take in all",
    "startupTimeout": "seconds connecting may take (default 30)",
    "allowTools": "only these tools are exported",
    "denyTools": "these tools are not exported",
    "prefix": "what exported names of this server start with (default: its name)",
    "protocol": "auto or one revision, e.g. 2025-11-25",
    "restart": "true (default): restart after a failure with back-off",
    "pingInterval": "seconds between health checks of an idle connection (default: none)",
}
HOST_KEYS = {
    "separator": "between prefix and name (default __)",
    "prefixTools": "always (default) or collisions",
    "maxBackoff": "longest wait between restarts, seconds (default 30)",
    "expose": "what the gateway serves: tools (default: every tool) or search (search_tools, describe_tools, call_tool)",
}
#: What a host's gateway can expose (:mod:`.discovery`); ``code`` is the next step of issue 32
#: (not served yet).
EXPOSE_MODES = ("tools", "search")
_VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_REVISION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: the top-level keys of a configuration file
TOP_KEYS = ("mcpServers", "servers", "host")


class ConfigError(ValueError):
    """A configuration the host refuses; the message names the server and the field."""

    def __init__(self, message: str, server: str | None = None, key: str | None = None) -> None:
        where = f"server {server!r}" if server else "the configuration"
        if key:
            where += f", field {key!r}"
        super().__init__(f"{where}: {message}")
        self.server = server
        self.key = key
        self.path: str | None = None

    def located(self, path: str | os.PathLike[str]) -> ConfigError:
        """This error, its message ending with the configuration file it is in."""
        if self.path is None:
            self.path = str(path)
            self.args = (f"{self.args[0]} (in {self.path})",)
        return self


def closest(key: str, accepted: Iterable[str]) -> str | None:
    """The accepted key ``key`` most likely misspells, if any is close (difflib)."""
    found = difflib.get_close_matches(key, list(accepted), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_key(key: str, accepted: Iterable[str], what: str = "key") -> str:
    """``unknown key (did you mean 'command'? accepted: ...)``."""
    accepted = list(accepted)
    guess = closest(key, accepted)
    hint = f"did you mean {guess!r}? " if guess else ""
    return f"unknown {what} ({hint}accepted: {', '.join(accepted)})"


@dataclass(frozen=True)
class ServerConfig:
    """One server, checked and with its variables expanded. Equal entries mean an
    unchanged server (what :meth:`Host.reload` compares)."""

    name: str
    transport: str
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    disabled: bool = False
    timeout: float = 60.0
    reset_timeout_on_progress: bool = False
    max_total_timeout: float | None = None
    startup_timeout: float = 30.0
    allow_tools: frozenset[str] | None = None
    deny_tools: frozenset[str] = frozenset()
    prefix: str | None = None
    protocol: str = "auto"
    restart: bool = True
    ping_interval: float | None = None
    #: the client's ``max_reply_bytes`` (None: its default); http and sse servers only
    max_reply_bytes: int | None = None

    def exports(self, tool: str) -> bool:
        """Whether the allow/deny lists let tool ``tool`` into the registry."""
        if self.allow_tools is not None and tool not in self.allow_tools:
            return False
        return tool not in self.deny_tools

    @property
    def where(self) -> str:
        """The command line or URL, for messages."""
        return " ".join(self.command) if self.transport == "stdio" else str(self.url)


@dataclass(frozen=True)
class HostConfig:
    """Every server, in configuration order, and the host-wide options."""

    servers: dict[str, ServerConfig] = field(default_factory=dict)
    separator: str = "__"
    prefix_tools: str = "always"
    max_backoff: float = 30.0
    expose: str = "tools"


def expand(value: str, server: str, key: str, environ: Mapping[str, str]) -> str:
    """``${VAR}`` / ``${VAR:-default}`` from ``environ``; an unset one without a default is
    a :class:`ConfigError`."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is None:
            if default is None:
                raise ConfigError(
                    f"environment variable {name} is not set (set it, or write ${{{name}:-default}})",
                    server, key,
                )
            return default
        return found

    return _VARIABLE.sub(one, value) if "$" in value else value


def _string(raw: Any, server: str, key: str, environ: Mapping[str, str]) -> str:
    if not isinstance(raw, str):
        raise ConfigError(f"must be a string, not {type(raw).__name__}", server, key)
    return expand(raw, server, key, environ)


def _strings(raw: Any, server: str, key: str, environ: Mapping[str, str]) -> list[str]:
    if not isinstance(raw, list):
        raise ConfigError("must be a list of strings", server, key)
    return [_string(item, server, f"{key}[{i}]", environ) for i, item in enumerate(raw)]


def _mapping(raw: Any, server: str, key: str, environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise ConfigError("must be an object of strings", server, key)
    return tuple((str(k), _string(v, server, f"{key}.{k}", environ)) for k, v in raw.items())


def _seconds(raw: Any, server: str, key: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw > 0 or not math.isfinite(raw):
        raise ConfigError("must be a positive number of seconds", server, key)
    return float(raw)


def _bytes(raw: Any, server: str, key: str) -> int:
    if type(raw) is not int or raw < 1:
        raise ConfigError(f"must be a positive whole number of bytes, e.g. {64 * 1024 * 1024} for 64 MiB", server, key)
    return raw


def _flag(raw: Any, server: str, key: str) -> bool:
    if not isinstance(raw, bool):
        raise ConfigError("must be true or false", server, key)
    return raw


def parse_server(name: str, raw: Any, environ: Mapping[str, str] | None = None) -> ServerConfig:
    """Check one ``mcpServers`` entry and expand its variables."""
    env_source = os.environ if environ is None else environ
    if not _SERVER_NAME.match(name):
        raise ConfigError(
            "a server name must be 1 to 64 letters, digits, '_', '-' or '.'", name
        )
    if not isinstance(raw, dict):
        raise ConfigError("must be an object with a command or a url", name)
    unknown = sorted(set(raw) - set(SERVER_KEYS))
    if unknown:
        raise ConfigError(unknown_key(unknown[0], SERVER_KEYS), name, unknown[0])
    options: dict[str, Any] = {}
    kind_key = "type" if "type" in raw else "transport"
    if kind_key in raw:
        kind = raw[kind_key]
        if kind not in TRANSPORTS:
            raise ConfigError(f"must be stdio, http or sse, not {kind!r}", name, kind_key)
        transport = TRANSPORTS[kind]
    else:
        transport = "stdio" if "command" in raw or "url" not in raw else "http"
    if transport == "stdio":
        if "command" not in raw:
            raise ConfigError("missing: a stdio server needs the program to start", name, "command")
        for key in ("url", "headers", "maxReplyBytes"):
            if key in raw:
                raise ConfigError("a stdio server takes command/args, not a URL or HTTP options", name, key)
        command = _string(raw["command"], name, "command", env_source)
        if not command.strip():
            raise ConfigError("is empty", name, "command")
        args = _strings(raw.get("args", []), name, "args", env_source)
        options["command"] = (command, *args)
        if "env" in raw:
            options["env"] = _mapping(raw["env"], name, "env", env_source)
        if "cwd" in raw:
            options["cwd"] = _string(raw["cwd"], name, "cwd", env_source)
    else:
        if "url" not in raw:
            raise ConfigError(f"missing: an {transport} server needs its URL", name, "url")
        for key in ("command", "args", "env", "cwd"):
            if key in raw:
                raise ConfigError(f"an {transport} server takes a url, not a command", name, key)
        url = _string(raw["url"], name, "url", env_source)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"{url!r} is not an http(s) URL with a host", name, "url")
        options["url"] = url
        if "headers" in raw:
            options["headers"] = _mapping(raw["headers"], name, "headers", env_source)
        if "maxReplyBytes" in raw:
            options["max_reply_bytes"] = _bytes(raw["maxReplyBytes"], name, "maxReplyBytes")
    for key, attribute in (
        ("timeout", "timeout"), ("startupTimeout", "startup_timeout"), ("pingInterval", "ping_interval"),
        ("maxTotalTimeout", "max_total_timeout"),
    ):
        if key in raw:
            options[attribute] = _seconds(raw[key], name, key)
    for key, attribute in (
        ("disabled", "disabled"), ("restart", "restart"), ("resetTimeoutOnProgress", "reset_timeout_on_progress"),
    ):
        if key in raw:
            options[attribute] = _flag(raw[key], name, key)
    if "maxTotalTimeout" in raw and not options.get("reset_timeout_on_progress"):
        raise ConfigError(
            "caps how far progress pushes a call's deadline out: set resetTimeoutOnProgress to true too",
            name, "maxTotalTimeout",
        )
    if "allowTools" in raw:
        options["allow_tools"] = frozenset(_strings(raw["allowTools"], name, "allowTools", env_source))
    if "denyTools" in raw:
        options["deny_tools"] = frozenset(_strings(raw["denyTools"], name, "denyTools", env_source))
    if "prefix" in raw:
        prefix = _string(raw["prefix"], name, "prefix", env_source)
        if not re.fullmatch(r"[A-Za-z0-9_-]{0,40}", prefix):
            raise ConfigError("must be at most 40 letters, digits, '_' or '-'", name, "prefix")
        options["prefix"] = prefix
    if "protocol" in raw:
        protocol = _string(raw["protocol"], name, "protocol", env_source)
        if protocol != "auto" and not _REVISION.match(protocol):
            raise ConfigError("must be auto or a revision such as 2025-11-25", name, "protocol")
        options["protocol"] = protocol
    return ServerConfig(name=name, transport=transport, **options)


def _check_top_level(raw: dict[str, Any], file: bool) -> None:
    """Refuse a top-level key that misspells ``mcpServers``, ``servers`` or ``host`` (any
    unknown one in a file without ``mcpServers``/``servers``), naming the expected key."""
    has_servers = "mcpServers" in raw or "servers" in raw
    for key in raw:
        if key in TOP_KEYS:
            continue
        guess = closest(str(key), TOP_KEYS)
        if guess is None and (has_servers or not file):
            continue  # another application's setting (in a file), or a server's name
        if not file and isinstance(raw[key], dict) and ("command" in raw[key] or "url" in raw[key]):
            continue  # a plain mapping's server whose name merely looks like one of ours
        hint = f"did you mean {guess!r}? " if guess else ""
        raise ConfigError(
            f"unknown top-level key ({hint}servers go under \"mcpServers\" (or \"servers\"), "
            'host-wide options under "host")', key=str(key),
        )
    if file and not has_servers:
        raise ConfigError('no "mcpServers" object: put the servers under "mcpServers"',
                          key="mcpServers")


def check_expose(value: Any, where: str = "expose") -> str:
    """``value`` if it is an expose mode; else a ValueError naming the accepted ones."""
    if value in EXPOSE_MODES:
        return str(value)
    if value == "code":
        raise ValueError(
            f"{where}: code mode is not available yet (issue 32, in progress); use "
            f"{' or '.join(repr(m) for m in EXPOSE_MODES)}"
        )
    raise ValueError(f"{where} must be one of {', '.join(repr(m) for m in EXPOSE_MODES)}, not {value!r}")


def parse_config(raw: Any, environ: Mapping[str, str] | None = None, *, file: bool = False) -> HostConfig:
    """A :class:`HostConfig` from the JSON value of a configuration file (``mcpServers``,
    or VS Code's ``servers``, plus an optional ``host`` object), or, unless ``file`` (the
    value was read from a file), from a plain mapping of server name -> entry."""
    if not isinstance(raw, dict):
        raise ConfigError("must be a JSON object with an mcpServers object")
    _check_top_level(raw, file)
    if file or "mcpServers" in raw or "servers" in raw or "host" in raw:
        servers_raw = raw.get("mcpServers", raw.get("servers", {}))
        host_raw = raw.get("host", {})
    else:  # Host({"weather": {...}})
        servers_raw, host_raw = raw, {}
    if not isinstance(servers_raw, dict):
        raise ConfigError("mcpServers must be an object: server name -> entry", key="mcpServers")
    if not isinstance(host_raw, dict):
        raise ConfigError("must be an object", key="host")
    unknown = sorted(set(host_raw) - set(HOST_KEYS))
    if unknown:
        raise ConfigError(unknown_key(unknown[0], HOST_KEYS, "host option"), key=f"host.{unknown[0]}")
    options: dict[str, Any] = {}
    if "separator" in host_raw:
        separator = host_raw["separator"]
        if not isinstance(separator, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,4}", separator):
            raise ConfigError("must be 1 to 4 letters, digits, '_' or '-'", key="host.separator")
        options["separator"] = separator
    if "prefixTools" in host_raw:
        if host_raw["prefixTools"] not in ("always", "collisions"):
            raise ConfigError("must be always or collisions", key="host.prefixTools")
        options["prefix_tools"] = host_raw["prefixTools"]
    if "maxBackoff" in host_raw:
        options["max_backoff"] = _seconds(host_raw["maxBackoff"], "", "host.maxBackoff")
    if "expose" in host_raw:
        try:
            options["expose"] = check_expose(host_raw["expose"], "host.expose")
        except ValueError as error:
            raise ConfigError(str(error).removeprefix("host.expose: ").removeprefix("host.expose "), key="host.expose") from None
    servers = {str(name): parse_server(str(name), entry, environ) for name, entry in servers_raw.items()}
    return HostConfig(servers=servers, **options)


def load_config(source: str | os.PathLike[str] | Mapping[str, Any] | HostConfig,
                environ: Mapping[str, str] | None = None) -> HostConfig:
    """A :class:`HostConfig` from a file path, a parsed mapping, or one already built."""
    if isinstance(source, HostConfig):
        return source
    if isinstance(source, Mapping):
        return parse_config(dict(source), environ)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read {str(path)!r}: {error.strerror}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{str(path)!r} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    try:
        return parse_config(raw, environ, file=True)
    except ConfigError as error:
        raise error.located(path) from None


def describe_keys() -> str:
    """The accepted keys of a server entry, one per line (for ``--help``)."""
    return "\n".join(f"  {key}: {meaning}" for key, meaning in SERVER_KEYS.items())


__all__ = [
    "ConfigError",
    "HostConfig",
    "ServerConfig",
    "describe_keys",
    "expand",
    "load_config",
    "parse_config",
    "parse_server",
]
