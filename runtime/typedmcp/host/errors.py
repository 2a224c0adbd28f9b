"""What the host raises; every message names the server (or the tool) and what to do."""

from __future__ import annotations


class HostError(RuntimeError):
    """Base of the host's errors."""


class UnknownTool(HostError, LookupError):
    """No tool (prompt, resource) of that name is in the registry (any more)."""

    def __init__(self, kind: str, name: str, known: int) -> None:
        super().__init__(
            f"no {kind} named {name!r} in the host's registry ({known} {kind}s known; "
            f"list them with host.tools(), or `mcp-host list`)"
        )
        self.kind = kind
        self.name = name


class ServerUnavailable(HostError, ConnectionError):
    """The owning server is not connected (starting, restarting, failed, stopped), or its
    connection broke during the call."""

    def __init__(self, server: str, why: str) -> None:
        super().__init__(f"server {server!r} is unavailable: {why}")
        self.server = server
        self.why = why


class ServerTimeout(HostError, TimeoutError):
    """The owning server did not answer in time (the call was cancelled there)."""

    def __init__(self, server: str, what: str, seconds: float, key: str = "timeout") -> None:
        """``key``: the configuration key whose limit ran out (``timeout``, or
        ``maxTotalTimeout`` for a call whose progress kept resetting its timeout)."""
        within = f"within {seconds:g} s" if key == "timeout" else f"within its {key} of {seconds:g} s"
        super().__init__(
            f"server {server!r} did not answer {what} {within} (the request was "
            f"cancelled; raise its {key!r} in the configuration if it is just slow)"
        )
        self.server = server


class InvalidArguments(HostError, ValueError):
    """Tool arguments that break the tool's inputSchema; nothing was sent."""

    def __init__(self, tool: str, server: str, problems: list[str]) -> None:
        super().__init__(
            f"invalid arguments for tool {tool!r} (server {server!r}): " + "; ".join(problems)
        )
        self.tool = tool
        self.server = server
        self.problems = problems


__all__ = ["HostError", "InvalidArguments", "ServerTimeout", "ServerUnavailable", "UnknownTool"]
