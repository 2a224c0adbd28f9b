"""Add a server to a desktop client's or an editor's MCP configuration (``mcp-host install``).

The files, as each client documents them:

* **Claude Desktop**: ``claude_desktop_config.json`` in ``~/Library/Application Support/Claude/``
  (macOS), ``%APPDATA%\\Claude\\`` (Windows), ``$XDG_CONFIG_HOME/Claude/`` or
  ``~/.config/Claude/`` (Linux); servers under ``mcpServers``.
* **Cursor**: ``~/.cursor/mcp.json``, or ``<project>/.cursor/mcp.json`` with ``--project``;
  servers under ``mcpServers``.
* **VS Code**: ``<project>/.vscode/mcp.json`` (``--project``, default the current folder);
  servers under ``servers``, each with ``"type": "stdio"``.

``--config FILE`` (or ``$TYPEDMCP_CLIENT_CONFIG``) writes another file in the client's
format. The file is read first: other servers and every other key are kept as they are; a
server of the same name is replaced only with ``--force``; a file that is not a JSON object
is refused and left alone. It is written whole to a temporary file beside it and renamed
over it, so a crash never leaves half a file.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_ENV = "TYPEDMCP_CLIENT_CONFIG"


class InstallError(Exception):
    """Nothing was written: the message says why and what to do."""


@dataclass(frozen=True)
class ClientFormat:
    """One client's configuration: where it lives, the key servers go under, and what an
    entry adds to ``command``/``args``/``env``."""

    name: str
    key: str
    extra: Mapping[str, str]

    def default_path(self, project: Path | None) -> Path:
        home = Path.home()
        if self.name == "claude-desktop":
            if project is not None:
                raise InstallError("Claude Desktop has no project configuration; drop --project")
            if sys.platform == "darwin":
                return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
            if sys.platform == "win32":
                base = Path(os.environ.get("APPDATA", home / "AppData" / "Roaming"))
                return base / "Claude" / "claude_desktop_config.json"
            base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
            return base / "Claude" / "claude_desktop_config.json"
        if self.name == "cursor":
            return (project if project is not None else home) / ".cursor" / "mcp.json"
        return (project if project is not None else Path.cwd()) / ".vscode" / "mcp.json"


CLIENTS = {
    "claude-desktop": ClientFormat("claude-desktop", "mcpServers", {}),
    "cursor": ClientFormat("cursor", "mcpServers", {}),
    "vscode": ClientFormat("vscode", "servers", {"type": "stdio"}),
}


def config_path(client: ClientFormat, given: str | None, project: str | None) -> Path:
    """The file to write: ``--config``, else ``$TYPEDMCP_CLIENT_CONFIG``, else the client's."""
    chosen = given or os.environ.get(CONFIG_ENV)
    if chosen:
        return Path(chosen).expanduser()
    return client.default_path(Path(project).expanduser().resolve() if project else None)


def entry(client: ClientFormat, command: str, args: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """The server's entry in ``client``'s format."""
    written: dict[str, Any] = {**client.extra, "command": command, "args": list(args)}
    if env:
        written["env"] = dict(env)
    return written


def read_config(path: Path) -> dict[str, Any]:
    """The file's JSON object ({} when there is no file yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise InstallError(f"cannot read {path}: {error.strerror or error}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InstallError(
            f"{path} is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
            "nothing was written: fix the file (or move it away) and run again"
        ) from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing "
                           "was written: fix the file (or move it away) and run again")
    return data


def install(
    client: ClientFormat, path: Path, name: str, server: dict[str, Any], *, force: bool
) -> bool:
    """Write ``server`` as ``name`` into ``path``; True when it replaced an entry."""
    data = read_config(path)
    servers = data.get(client.key, {})
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: {client.key!r} is a JSON {type(servers).__name__}, not an "
                           "object of servers; nothing was written: fix the file and run again")
    replaced = name in servers
    if replaced and not force:
        raise InstallError(f"{path} already has a server named {name!r}; nothing was written: "
                           "pass --force to replace it, or --name to add this one under another name")
    data[client.key] = {**servers, name: server}
    write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return replaced


def write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file in the same folder and a rename (the
    file keeps its permissions)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else None
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise InstallError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise InstallError(f"cannot write {path}: {error.strerror or error}; it was left as it "
                               "was") from None
        raise
