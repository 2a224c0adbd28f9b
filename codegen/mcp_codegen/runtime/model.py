"""The base class of every generated pydantic model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class MCPModel(BaseModel):
    """Open MCP object: unknown keys are kept, either field name or wire name is accepted.

    ``model_dump()`` uses wire names by default, so a parsed message dumps back to what
    was parsed with ``model_dump(mode="json", exclude_unset=True)``. Validators are built
    on first use (``defer_build``), which keeps importing a generated package cheap.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
    )
