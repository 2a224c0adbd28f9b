"""Dispatch-table entries: what a generated package says about each method.

The runtime reads these and nothing else to route, validate and gate messages; there is no
hand-kept list of methods anywhere.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter

ResultT = TypeVar("ResultT")


class Direction(str, enum.Enum):
    """Who sends a message."""

    CLIENT_TO_SERVER = "client->server"
    SERVER_TO_CLIENT = "server->client"
    BOTH = "both"


class Era(str, enum.Enum):
    """Handshake revisions (initialize, sessions) or stateless ones (server/discover)."""

    HANDSHAKE = "handshake"
    STATELESS = "stateless"


@dataclass(frozen=True)
class Gate:
    """A capability path that ``side`` (``client`` or ``server``) must have declared."""

    side: str
    path: tuple[str, ...]


def _validator(model: Any) -> Any:
    """``Model.model_validate``, or a TypeAdapter's for union aliases."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_validate
    return TypeAdapter(model).validate_python


@dataclass(frozen=True)
class RequestSpec(Generic[ResultT]):
    """One request method: its params and result types, handler name and gates.

    ``embedded`` marks requests that are not sent as JSON-RPC requests but carried inside
    an input-required result (stateless era).
    """

    method: str
    direction: Direction
    params_type: Any
    params_required: bool
    result_type: Any
    alternative_result_types: tuple[Any, ...]
    handler_name: str
    gates: tuple[Gate, ...]
    embedded: bool = False
    _validators: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def validate_params(self, raw: Any) -> Any:
        """Validate wire params (None when absent and optional)."""
        if raw is None and not self.params_required:
            return None
        validate = self._validators.get("params")
        if validate is None:
            validate = self._validators["params"] = _validator(self.params_type)
        return validate(raw)

    def validate_result(self, raw: Any) -> ResultT:
        """Validate a wire result as this method's main result type."""
        validate = self._validators.get("result")
        if validate is None:
            validate = self._validators["result"] = _validator(self.result_type)
        result: ResultT = validate(raw)
        return result


@dataclass(frozen=True)
class NotificationSpec:
    """One notification method."""

    method: str
    direction: Direction
    params_type: Any
    params_required: bool
    handler_name: str
    gates: tuple[Gate, ...]
    _validators: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def validate_params(self, raw: Any) -> Any:
        """Validate wire params (None when absent and optional)."""
        if raw is None and not self.params_required:
            return None
        validate = self._validators.get("params")
        if validate is None:
            validate = self._validators["params"] = _validator(self.params_type)
        return validate(raw)
