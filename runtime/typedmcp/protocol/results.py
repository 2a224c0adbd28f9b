"""Wire data and results: models as wire data, an older revision's result lifted to a
newer type, alternative result types, and validation errors worded for a peer."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from ..engine.jsonrpc import ECHO_LIMIT, INTERNAL_ERROR, RpcError, clip
from ..engine.jsonrpc import CapabilityError as CapabilityError

logger = logging.getLogger("typedmcp")


class ProtocolViolation(RuntimeError):
    """The server answered in a way its revision forbids (an unknown ``resultType``,
    ``input_required`` for a method that may not ask, endless input rounds)."""


class InvalidResult(ProtocolViolation):
    """The peer answered a request with a result that is not what the request's revision
    defines. ``method``: the request; ``expected``: the result type's name; ``problem``:
    a short summary of what is wrong (clipped; never the whole answer)."""

    def __init__(self, method: str, expected: str, problem: str) -> None:
        super().__init__(f"the peer answered {method} with an invalid {expected}: {problem}")
        self.method = method
        self.expected = expected
        self.problem = problem


def invalid_result(spec: Any, error: ValidationError) -> InvalidResult:
    """The :class:`InvalidResult` of a peer's answer to ``spec`` that failed validation."""
    return InvalidResult(spec.method, result_name(spec), describe(error))


def result_name(spec: Any) -> str:
    """The name of a request's result type (``CallToolResult``), for messages."""
    return str(getattr(spec.result_type, "__name__", "result"))


def expected_results(spec: Any) -> tuple[type, ...]:
    """The model classes a handler of ``spec`` may return as they are: the result type (an
    alias such as ``EmptyResult`` read as the model it names) and its alternatives."""
    found = []
    for model in (spec.result_type, *spec.alternative_result_types):
        model = getattr(model, "__value__", model)
        if isinstance(model, type):
            found.append(model)
    return tuple(found)


def wrong_result(spec: Any, handler: Any, result: Any, why: str) -> RpcError:
    """Log that a handler returned what its method does not define (naming the method, the
    handler, what it returned and what was expected); the -32603 the peer gets instead."""
    method, expected = spec.method, result_name(spec)
    handler_name = getattr(handler, "__qualname__", None) or type(handler).__name__
    logger.error(
        "the %s handler %s returned %s, not a valid %s: %s (return a models.%s, or a dict "
        "of its wire fields)",
        method, handler_name, "None" if result is None else f"a {type(result).__name__} "
        f"({clip(repr(result), 80)})", expected, why, expected,
    )
    return RpcError(INTERNAL_ERROR, f"Internal error: the {method} handler returned an invalid result")


def to_wire(model: Any) -> Any:
    """Wire form of a result or params value: models dumped by alias, unset fields left out."""
    if isinstance(model, BaseModel):  # model_dump(mode="json", by_alias=True, exclude_unset=True)
        return model.__pydantic_serializer__.to_python(
            model, mode="json", by_alias=True, exclude_unset=True
        )
    return model


def json_data(value: Any) -> Any:
    """What ``value`` reads as once encoded and decoded: models by alias, unset fields left
    out; anything else as JSON (tuples become lists, ...)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return to_jsonable_python(value)


def plain(value: Any) -> Any:
    """Wire-shaped plain data: models (of any revision) dumped by alias, deeply.

    Outgoing params are re-validated by the negotiated revision's types, which do not
    accept model instances of another revision.
    """
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


#: What a result field a newer revision requires means when an older revision's result
#: lacks it (the older peer said nothing about it). 2026-07-28's caching hints: ``ttlMs`` 0
#: ("the response SHOULD be considered immediately stale") and the narrower ``cacheScope``,
#: ``private``. ``tests/test_runtime_sieve.py`` checks that this covers every such field of
#: every pair of revisions.
ABSENT_RESULT_FIELDS: dict[str, Any] = {"ttlMs": 0, "cacheScope": "private"}


_required_cache: dict[type, frozenset[str]] = {}


def required_wire_names(model: Any) -> frozenset[str]:
    """The wire names of a model's required fields (empty for anything but a model)."""
    if not isinstance(model, type) or not issubclass(model, BaseModel):
        return frozenset()
    found = _required_cache.get(model)
    if found is None:
        found = _required_cache[model] = frozenset(
            info.alias or name for name, info in model.model_fields.items() if info.is_required()
        )
    return found


def lifted(model: Any, raw: Any) -> Any:
    """An older revision's result with what ``model`` (its newer type) requires and it lacks
    filled from :data:`ABSENT_RESULT_FIELDS`, so a caller typed with the newer revision can
    read it; anything else is left as it is (and fails validation if it must)."""
    if not isinstance(raw, dict) or "task" in raw:
        return raw
    missing = {
        key: value
        for key, value in ABSENT_RESULT_FIELDS.items()
        if key not in raw and key in required_wire_names(model)
    }
    return {**raw, **missing} if missing else raw


def validate_any_result(spec: Any, raw: Any) -> Any:
    """The method's main result type, else an alternative it may answer with
    (``CreateTaskResult`` for a task-augmented request, ``InputRequiredResult``), when
    ``raw`` is shaped like it (:func:`could_be`); else the main type's error."""
    try:
        return spec.validate_result(raw)
    except ValidationError:
        for alternative in spec.alternative_result_types:
            if not could_be(alternative, raw):
                continue
            try:
                return alternative.model_validate(raw, by_name=False)
            except ValidationError:
                continue
        raise


def could_be(model: Any, raw: Any) -> bool:
    """Whether ``raw`` may be an instance of the alternative result ``model``: it has the
    fields ``model`` requires, and its ``resultType`` (``"complete"`` when absent, as the
    spec reads it) is the one ``model`` defaults to, if it has one. An open model with no
    required field (``InputRequiredResult``) would otherwise take any broken result."""
    if not isinstance(raw, dict) or not required_wire_names(model) <= raw.keys():
        return False
    info = getattr(model, "model_fields", {}).get("result_type")
    if info is None or not isinstance(info.default, str):
        return True
    return bool(raw.get("resultType", "complete") == info.default)


def holds_models(params: Mapping[str, Any]) -> bool:
    """Whether params need :func:`plain` (a model, or a list that may hold models)."""
    # a loop, not any(generator): this runs on every request
    for value in params.values():  # noqa: SIM110
        if isinstance(value, (BaseModel, list, tuple)):
            return True
    return False


def describe(error: ValidationError) -> str:
    """A short, user-facing summary of a pydantic validation error. Locations and messages
    may hold what the peer sent (a key, a union tag): each is quoted in part (``clip``)."""
    parts = []
    for item in error.errors(include_url=False)[:5]:
        location = ".".join(clip(str(p)) for p in item["loc"]) or "(root)"
        parts.append(f"{location}: {_clipped_message(item)}")
    more = f" (+{error.error_count() - 5} more)" if error.error_count() > 5 else ""
    return "; ".join(parts) + more


def _clipped_message(item: Any) -> str:
    """A validation error's message with the long values it quotes (the input, a union
    tag in its context) cut to :data:`ECHO_LIMIT` characters each."""
    message = str(item["msg"])
    if len(message) <= 2 * ECHO_LIMIT:
        return message
    quoted_values = [item.get("input"), *(item.get("ctx") or {}).values()]
    for value in quoted_values:
        if isinstance(value, str) and len(value) > ECHO_LIMIT and value in message:
            message = message.replace(value, clip(value))
    return clip(message, 4 * ECHO_LIMIT)
