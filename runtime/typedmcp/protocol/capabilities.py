"""Capabilities: whether a capabilities object declares a path, declaring one, and what a
request's params need beyond its method's gates (a variant, a task augmentation)."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..engine.jsonrpc import CapabilityError as CapabilityError
from ..engine.jsonrpc import RpcError
from .meta import MISSING_REQUIRED_CLIENT_CAPABILITY
from .spec import Variant


def has_capability(capabilities: Mapping[str, Any] | None, path: tuple[str, ...]) -> bool:
    """Whether ``capabilities`` declares ``path`` (an object, or ``true`` for a flag)."""
    node: Any = capabilities or {}
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return node is not False and node is not None


def declare(capabilities: dict[str, Any], path: tuple[str, ...], model: Any = None) -> None:
    """Add ``path`` to a capabilities object, with the value its schema wants there:
    ``True`` for a flag (``resources.subscribe``), ``{}`` for an object (``tasks.list``).
    ``model`` is the side's generated capabilities class (flags are its bool fields)."""
    node = capabilities
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        field_model, is_flag = _capability_field(model, part)
        if last:
            if part not in node:
                node[part] = True if is_flag else {}
        else:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                return
            node, model = child, field_model


def _capability_field(model: Any, wire_name: str) -> tuple[Any, bool]:
    """(the nested model of a capabilities field, whether the field is a boolean flag)."""
    fields = getattr(model, "model_fields", None)
    if not fields:
        return None, wire_name in ("listChanged", "subscribe")
    for name, info in fields.items():
        if (info.alias or name) != wire_name:
            continue
        members = [_unannotated(a) for a in (typing.get_args(info.annotation) or (info.annotation,))]
        nested = next((m for m in members if isinstance(m, type) and issubclass(m, BaseModel)), None)
        return nested, nested is None and bool in members
    return None, False


def _unannotated(annotation: Any) -> Any:
    """``Annotated[bool, Strict()]`` (pydantic's StrictBool) -> ``bool``."""
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0]
    return annotation


def may_answer_with_task(spec: Any) -> bool:
    """Whether a method may be run as a task (its table lists ``CreateTaskResult``)."""
    return any(getattr(t, "__name__", "") == "CreateTaskResult" for t in spec.alternative_result_types)


def task_path(method: str) -> tuple[str, ...]:
    """``tasks.requests.<a>.<b>``: the capability that lets method ``a/b`` run as a task."""
    return ("tasks", "requests", *method.split("/"))


def variant_of(spec: Any, params: Any) -> Variant | None:
    """The variant of a request's params (by its constant field; the default one when the
    field is absent); None when the method has no variants or the value is unknown."""
    variants: tuple[Variant, ...] = spec.variants
    for variant in variants:
        value = params.get(variant.field) if isinstance(params, Mapping) else None
        if value == variant.value or (value is None and variant.default):
            return variant
    return None


def variant_allowed(capabilities: Mapping[str, Any] | None, spec: Any, variant: Variant) -> bool:
    """Whether ``capabilities`` take ``variant``: its own capability is declared, or it is
    the default one and none of the method's variants is (an empty ``elicitation`` object
    means form mode)."""
    if has_capability(capabilities, variant.gate.path):
        return True
    return variant.default and not any(
        has_capability(capabilities, other.gate.path) for other in spec.variants
    )


def unmet_capability(
    spec: Any, params: Any, capabilities: Mapping[str, Any] | None
) -> tuple[str, ...] | None:
    """The capability of the receiver (``capabilities``) that these params need beyond the
    method's own gates, when it is not declared: the variant's (``elicitation.url``), or
    the task augmentation's (``tasks.requests.sampling.createMessage``). None: all met."""
    if spec.variants:
        variant = variant_of(spec, params)
        if variant is not None and not variant_allowed(capabilities, spec, variant):
            return variant.gate.path
    if isinstance(params, Mapping) and params.get("task") is not None and may_answer_with_task(spec):
        path = task_path(spec.method)
        if not has_capability(capabilities, path):
            return path
    return None


def require_client_capabilities(
    capabilities: Mapping[str, Any] | None, method: str, spec: Any, params: Mapping[str, Any]
) -> None:
    """-32021 when a request's client ``capabilities`` do not allow the input request
    ``method`` (its gates, the form of its params, sampling with tools)."""
    required: dict[str, Any] = {}
    for gate in spec.gates:
        if gate.side == "client" and not has_capability(capabilities, gate.path):
            declare(required, gate.path)
    missing = None if required else unmet_capability(spec, params, capabilities)
    if missing is not None:  # a form of the params the client did not declare (URL mode)
        declare(required, missing)
    if method == "sampling/createMessage" and params.get("tools") and not has_capability(
        capabilities, ("sampling", "tools")
    ):
        declare(required, ("sampling", "tools"))
    if required:
        names = ", ".join(sorted(required))
        raise RpcError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"Missing required client capability: {names} (needed for {method})",
            {"requiredCapabilities": required},
        )
