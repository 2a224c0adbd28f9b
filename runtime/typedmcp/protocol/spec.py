"""Dispatch-table entries: what a generated package says about each method.

The runtime reads these and nothing else to route, validate and gate messages; there is no
hand-kept list of methods anywhere. Types are referenced lazily (``params_ref`` returns
the params class), so importing a dispatch table builds no model class.
"""

from __future__ import annotations

import contextlib
import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter
from pydantic_core import SchemaValidator

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


@dataclass(frozen=True)
class Variant:
    """One form of a request's params, told apart by a constant field, that the receiver
    declares on its own: ``elicitation/create`` with ``mode: "url"`` needs the client's
    ``elicitation.url`` and is answered by the handler ``elicit_url``.

    ``default``: the form params take when ``field`` is absent; it is answered by the
    method's own handler (``elicit``), and a receiver that declared the method's capability
    but none of its variants takes it (an empty ``elicitation`` object means form mode).
    """

    field: str
    value: str
    gate: Gate
    handler_name: str
    default: bool = False


def validator_of(model: Any) -> Callable[[Any], Any]:
    """``Model.model_validate`` (wire names only), or a TypeAdapter's for union aliases.

    For a model this is its built core validator's ``validate_python`` (what
    ``model_validate`` calls), bound once: validation sits on every message's path.
    """
    if isinstance(model, type) and issubclass(model, BaseModel):
        validate = model.model_validate
        with contextlib.suppress(Exception):  # build it now (the models defer building)
            model.__pydantic_validator__.validate_python  # noqa: B018
        core = model.__pydantic_validator__
        if isinstance(core, SchemaValidator):
            return functools.partial(core.validate_python, by_name=False)

        def validate_model(raw: Any) -> Any:  # not buildable yet: model_validate says why
            return validate(raw, by_name=False)

        return validate_model
    adapter: TypeAdapter[Any] = TypeAdapter(model)

    def validate_union(raw: Any) -> Any:
        return adapter.validate_python(raw, by_name=False)

    return validate_union


@dataclass(frozen=True)
class _Lazy:
    """Per-spec cache of resolved types and validators."""

    values: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, make: Callable[[], Any]) -> Any:
        try:
            return self.values[key]
        except KeyError:
            value = self.values[key] = make()
            return value

    def validator(self, key: str, type_ref: Callable[[], Any] | None) -> Callable[[Any], Any]:
        """The validator cached under ``key``, made from the type ``type_ref`` returns."""
        validate = self.values.get(key)
        if validate is None:
            validate = self.values[key] = validator_of(None if type_ref is None else type_ref())
        return validate


@dataclass(frozen=True)
class RequestSpec(Generic[ResultT]):
    """One request method: its params and result types, handler name and gates.

    ``embedded`` marks requests that are not sent as JSON-RPC requests but carried inside
    an input-required result (stateless era). ``variants``: the forms of its params that
    need capabilities of their own (see :class:`Variant`); empty for most methods.
    """

    method: str
    direction: Direction
    params_ref: Callable[[], Any] | None
    params_required: bool
    result_ref: Callable[[], Any]
    alternatives_ref: Callable[[], tuple[Any, ...]]
    handler_name: str
    gates: tuple[Gate, ...]
    embedded: bool = False
    variants: tuple[Variant, ...] = ()
    _lazy: _Lazy = field(default_factory=_Lazy, repr=False, compare=False)

    @property
    def params_type(self) -> Any:
        """The params model (or union alias), or None when the method takes no params."""
        return None if self.params_ref is None else self._lazy.get("params", self.params_ref)

    @property
    def result_type(self) -> Any:
        """The main result model."""
        return self._lazy.get("result", self.result_ref)

    @property
    def alternative_result_types(self) -> tuple[Any, ...]:
        """Results the method may give instead (``CreateTaskResult``, ``InputRequiredResult``)."""
        alternatives: tuple[Any, ...] = self._lazy.get("alternatives", self.alternatives_ref)
        return alternatives

    def validate_params(self, raw: Any) -> Any:
        """Validate wire params (None when absent and optional)."""
        if raw is None and not self.params_required:
            return None
        return self._lazy.validator("validate_params", self.params_ref)(raw)

    def validate_result(self, raw: Any) -> ResultT:
        """Validate a wire result as this method's main result type."""
        result: ResultT = self._lazy.validator("validate_result", self.result_ref)(raw)
        return result


@dataclass(frozen=True)
class NotificationSpec:
    """One notification method."""

    method: str
    direction: Direction
    params_ref: Callable[[], Any] | None
    params_required: bool
    handler_name: str
    gates: tuple[Gate, ...]
    _lazy: _Lazy = field(default_factory=_Lazy, repr=False, compare=False)

    @property
    def params_type(self) -> Any:
        """The params model (or union alias), or None when the method takes no params."""
        return None if self.params_ref is None else self._lazy.get("params", self.params_ref)

    def validate_params(self, raw: Any) -> Any:
        """Validate wire params (None when absent and optional)."""
        if raw is None and not self.params_required:
            return None
        return self._lazy.validator("validate_params", self.params_ref)(raw)
