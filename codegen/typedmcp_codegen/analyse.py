"""Stage 2: analyse a schema into a small, frozen protocol model.

For every request and notification: method, direction, message/params/result types and the
capability that gates it. Everything is derived from the schema's structure (the
Client*/Server*/Input* unions, ``<X>ResultResponse`` definitions, the ``XRequest -> XResult``
naming, the capability objects). Two small exception tables cover what the schema leaves
implicit: :data:`EMPTY_RESULT_METHODS` and :data:`GATE_EXCEPTIONS`.
"""

from __future__ import annotations

import enum
import keyword
import re
from dataclasses import dataclass
from typing import Any

from .document import HANDSHAKE_METHOD, Era, definitions, ref_name
from .errors import CodegenError
from .names import snake_case


# Requests whose result type the schema does not name: they answer with the empty result.
EMPTY_RESULT_METHODS = frozenset(
    {"ping", "resources/subscribe", "resources/unsubscribe", "logging/setLevel"}
)
# Messages whose capability is not named by their method segments.
GATE_EXCEPTIONS: dict[str, tuple[str, ...]] = {
    "notifications/message": ("logging",),
    "notifications/resources/updated": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
}
# The unions every MCP schema has: the messages each side may send. A requirement is met by
# any one of its names (2026-07-28 has InputRequest, requests carried inside results,
# instead of ServerRequest).
REQUIRED_UNIONS: tuple[tuple[str, ...], ...] = (
    ("ClientRequest",),
    ("ClientNotification",),
    ("ServerRequest", "InputRequest"),
    ("ServerNotification",),
)
ROLE_UNIONS = {
    "ClientRequest": ("request", "client"),
    "ServerRequest": ("request", "server"),
    "InputRequest": ("request", "server"),
    "ClientNotification": ("notification", "client"),
    "ServerNotification": ("notification", "server"),
}


class Direction(str, enum.Enum):
    """Who sends a message (the member names are what generated dispatch tables spell)."""

    CLIENT_TO_SERVER = "client->server"
    SERVER_TO_CLIENT = "server->client"
    BOTH = "both"


@dataclass(frozen=True)
class Gate:
    """A capability path that ``side`` (``client`` or ``server``) must have declared."""

    side: str
    path: tuple[str, ...]


@dataclass(frozen=True)
class Variant:
    """A form of a request's params that the receiver declares on its own (see
    ``typedmcp.protocol.spec.Variant``): the branch of a params union whose constant ``field`` is
    ``value``, gated by the sub-capability of that name (``elicitation.url``)."""

    field: str
    value: str
    gate: Gate
    handler_name: str
    params_type: str
    default: bool


@dataclass(frozen=True)
class Request:
    """One request method and everything the stubs and dispatch table need about it."""

    method: str
    direction: Direction
    request_type: str
    params_type: str | None
    params_required: bool
    result_type: str
    alternative_result_types: tuple[str, ...]
    handler_name: str
    gates: tuple[Gate, ...]
    embedded: bool
    pairing_rule: str
    description: str
    variants: tuple[Variant, ...] = ()


@dataclass(frozen=True)
class Notification:
    """One notification method."""

    method: str
    direction: Direction
    notification_type: str
    params_type: str | None
    params_required: bool
    handler_name: str
    gates: tuple[Gate, ...]
    description: str


@dataclass(frozen=True)
class Protocol:
    """The protocol of one schema revision."""

    revision: str
    era: Era
    sha256: str
    requests: tuple[Request, ...]
    notifications: tuple[Notification, ...]

    def request(self, method: str) -> Request:
        return next(r for r in self.requests if r.method == method)


def analyse(document: dict[str, Any], revision: str, sha256: str) -> Protocol:
    """Derive the :class:`Protocol` of a schema document."""
    defs: dict[str, Any] = definitions(document)
    _check_message_unions(defs, revision)
    members = _role_members(defs)
    requests: list[Request] = []
    notifications: list[Notification] = []
    for type_name in sorted(members, key=lambda n: _method_of(defs, n) or ""):
        kind, sides = members[type_name]
        method = _method_of(defs, type_name)
        if method is None:
            raise CodegenError(
                f"{type_name} is listed in a Client*/Server* union but has no const 'method'",
                "the schema is not an MCP schema this generator understands",
            )
        direction = _direction(sides)
        params_type, params_required = _params(defs, type_name)
        description = _first_paragraph(defs[type_name].get("description", ""))
        if kind == "request":
            result, alternatives, rule = _pair_result(defs, type_name, method, params_type)
            gates = _request_gates(defs, method, direction)
            name = handler_name(type_name, "Request")
            requests.append(
                Request(
                    method=method,
                    direction=direction,
                    request_type=type_name,
                    params_type=params_type,
                    params_required=params_required,
                    result_type=result,
                    alternative_result_types=alternatives,
                    handler_name=name,
                    gates=gates,
                    embedded="InputRequest" in sides,
                    pairing_rule=rule,
                    description=description,
                    variants=_variants(defs, params_type, gates, name),
                )
            )
        else:
            notifications.append(
                Notification(
                    method=method,
                    direction=direction,
                    notification_type=type_name,
                    params_type=params_type,
                    params_required=params_required,
                    handler_name=handler_name(type_name, "Notification"),
                    gates=_notification_gates(defs, method, direction),
                    description=description,
                )
            )
    messages: list[Request | Notification] = [*requests, *notifications]
    for message in messages:
        if not message.handler_name.isidentifier() or keyword.iskeyword(message.handler_name):
            raise CodegenError(
                f"{message.method}: its type name gives the Python name "
                f"{message.handler_name!r}, which is not an identifier",
                "report this schema; the naming rule needs an exception for it",
            )
    era = Era.HANDSHAKE if any(r.method == HANDSHAKE_METHOD for r in requests) else Era.STATELESS
    protocol = Protocol(revision, era, sha256, tuple(requests), tuple(notifications))
    _check_unique_names(protocol)
    return protocol


def _check_message_unions(defs: dict[str, Any], revision: str) -> None:
    """A schema without the message unions is not an MCP schema: say which are missing."""
    missing = [
        names[0] if len(names) == 1 else f"{names[0]} (or {' or '.join(names[1:])})"
        for names in REQUIRED_UNIONS
        if not any(name in defs for name in names)
    ]
    if missing:
        raise CodegenError(
            f"revision {revision}: not an MCP schema: it lacks {', '.join(missing)} (the "
            "definitions that list the requests and notifications each side may send)",
            "pass the schema.json of an MCP revision, or a schema shaped like one "
            "(see mcp-codegen --list for the known revisions)",
        )


def handler_name(type_name: str, suffix: str) -> str:
    """``CallToolRequest`` -> ``call_tool``; ``ProgressNotification`` -> ``progress``."""
    base = type_name[: -len(suffix)] if type_name.endswith(suffix) else type_name
    return snake_case(base)


def _role_members(defs: dict[str, Any]) -> dict[str, tuple[str, frozenset[str]]]:
    """Message type -> (request|notification, the role unions it belongs to)."""
    found: dict[str, tuple[str, set[str]]] = {}
    for role, (kind, _side) in ROLE_UNIONS.items():
        for member in _union_members(defs, role):
            entry = found.setdefault(member, (kind, set()))
            entry[1].add(role)
    return {name: (kind, frozenset(roles)) for name, (kind, roles) in found.items()}


def _union_members(defs: dict[str, Any], role: str) -> list[str]:
    schema = defs.get(role)
    if schema is None:
        return []
    if isinstance(schema.get("anyOf"), list):
        return [name for name in (ref_name(b) for b in schema["anyOf"]) if name]
    if ref_name(schema):
        return [str(ref_name(schema))]
    # A one-member union flattened upstream: find the message with the same method.
    method = _const(schema.get("properties", {}).get("method"))
    twins = [
        name
        for name, other in defs.items()
        if name != role and name not in ROLE_UNIONS and _method_of(defs, name) == method
    ]
    if method is None or len(twins) != 1:
        raise CodegenError(
            f"union {role} is neither an anyOf nor a copy of exactly one message",
            "the schema is not an MCP schema this generator understands",
        )
    return twins


def _direction(roles: frozenset[str]) -> Direction:
    sides = {ROLE_UNIONS[role][1] for role in roles}
    if sides == {"client", "server"}:
        return Direction.BOTH
    return Direction.CLIENT_TO_SERVER if sides == {"client"} else Direction.SERVER_TO_CLIENT


def _method_of(defs: dict[str, Any], type_name: str) -> str | None:
    schema = defs.get(type_name, {})
    return _const(schema.get("properties", {}).get("method"))


def _const(node: Any) -> str | None:
    if not isinstance(node, dict):
        return None
    if isinstance(node.get("const"), str):
        return str(node["const"])
    enum_values = node.get("enum")
    if isinstance(enum_values, list) and len(enum_values) == 1:
        return str(enum_values[0])
    return None


def _params(defs: dict[str, Any], type_name: str) -> tuple[str | None, bool]:
    schema = defs[type_name]
    params = schema.get("properties", {}).get("params")
    required = "params" in schema.get("required", ())
    if params is None:
        return None, False
    name = ref_name(params)
    return (name if name else f"{type_name}Params"), required


def _pair_result(
    defs: dict[str, Any], type_name: str, method: str, params_type: str | None
) -> tuple[str, tuple[str, ...], str]:
    base = type_name.removesuffix("Request")
    named = f"{base}Result"
    response = defs.get(f"{base}ResultResponse")
    if response is not None:
        result_schema = response.get("properties", {}).get("result", {})
        branches = result_schema.get("anyOf", [result_schema])
        names = [n for n in (ref_name(b) for b in branches) if n]
        main = named if named in names else (names[-1] if names else None)
        if main is not None:
            return main, tuple(n for n in names if n != main), "response-def"
    if named in defs:
        return named, _task_alternatives(defs, params_type), "naming"
    if method in EMPTY_RESULT_METHODS and "EmptyResult" in defs:
        return "EmptyResult", (), "exception"
    raise CodegenError(
        f"request {method} ({type_name}) has no result type: no {base}ResultResponse, "
        f"no {named}, and it is not in the exception table",
        "add the method to EMPTY_RESULT_METHODS in typedmcp_codegen.analyse if it answers with "
        "an empty result, or report the schema",
    )


def _task_alternatives(defs: dict[str, Any], params_type: str | None) -> tuple[str, ...]:
    """A request whose params take ``task`` may answer with ``CreateTaskResult`` instead."""
    params = defs.get(params_type or "", {})
    branches = [_deref(defs, b) for b in params.get("anyOf", [])] or [params]
    takes_task = any("task" in branch.get("properties", {}) for branch in branches)
    return ("CreateTaskResult",) if takes_task and "CreateTaskResult" in defs else ()


def _capability_object(defs: dict[str, Any], side: str) -> dict[str, Any]:
    return _deref(defs, defs.get(f"{side.capitalize()}Capabilities", {}))


def _deref(defs: dict[str, Any], node: Any) -> dict[str, Any]:
    for _ in range(20):
        name = ref_name(node)
        if name is None:
            break
        node = defs.get(name, {})
    return node if isinstance(node, dict) else {}


def _gate_path(defs: dict[str, Any], side: str, segments: list[str]) -> tuple[str, ...] | None:
    """Match method segments against a side's capabilities: ``tools/list`` -> ``(tools,)``."""
    capabilities = _capability_object(defs, side).get("properties", {})
    if not segments:
        return None
    head = next((c for c in (segments[0], segments[0] + "s") if c in capabilities), None)
    if head is None:
        return None
    sub = _deref(defs, capabilities[head]).get("properties", {})
    for segment in segments[1:]:
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), segment)
        if camel in sub:
            return (head, camel)
    return (head,)


def _request_gates(defs: dict[str, Any], method: str, direction: Direction) -> tuple[Gate, ...]:
    receivers = {
        Direction.CLIENT_TO_SERVER: ("server",),
        Direction.SERVER_TO_CLIENT: ("client",),
        Direction.BOTH: ("client", "server"),
    }[direction]
    if method in GATE_EXCEPTIONS:
        return tuple(Gate(side, GATE_EXCEPTIONS[method]) for side in receivers)
    gates = []
    for side in receivers:
        path = _gate_path(defs, side, method.split("/"))
        if path:
            gates.append(Gate(side, path))
    return tuple(gates)


def _notification_gates(
    defs: dict[str, Any], method: str, direction: Direction
) -> tuple[Gate, ...]:
    senders = {
        Direction.CLIENT_TO_SERVER: ("client",),
        Direction.SERVER_TO_CLIENT: ("server",),
        Direction.BOTH: ("client", "server"),
    }[direction]
    if method in GATE_EXCEPTIONS:
        return tuple(Gate(side, GATE_EXCEPTIONS[method]) for side in senders)
    segments = method.split("/")[1:]
    gates = []
    for side in senders:
        path = _gate_path(defs, side, segments)
        if path:
            gates.append(Gate(side, path))
    if not gates:  # e.g. elicitation/complete: gated by what the receiver supports
        receivers = {"client": "server", "server": "client"}
        for side in senders:
            path = _gate_path(defs, receivers[side], segments)
            if path:
                gates.append(Gate(receivers[side], path))
    return tuple(gates)


def _variants(
    defs: dict[str, Any], params_type: str | None, gates: tuple[Gate, ...], handler: str
) -> tuple[Variant, ...]:
    """The forms of a request's params that need capabilities of their own.

    Params that are a union whose branches each fix one field to a constant, where every
    constant names a sub-capability of the request's gate (``ElicitRequestParams``: ``mode``
    is ``form`` or ``url``, and ``elicitation`` has ``form`` and ``url``). The branch whose
    field is optional is the default (answered by the method's own handler); each other
    branch gets the handler ``<handler>_<value>`` (``elicit_url``).
    """
    union = defs.get(params_type or "", {})
    branches = union.get("anyOf") if isinstance(union, dict) else None
    if not isinstance(branches, list) or len(branches) < 2:
        return ()
    named = [(ref_name(branch), _deref(defs, branch)) for branch in branches]
    if any(name is None for name, _ in named):
        return ()
    fields = set.intersection(
        *({k for k, v in b.get("properties", {}).items() if _const(v)} for _, b in named)
    )
    for field_name in sorted(fields):
        values = [_const(b["properties"][field_name]) for _, b in named]
        defaults = [field_name not in b.get("required", ()) for _, b in named]
        if len(set(values)) != len(values) or sum(defaults) > 1:
            continue
        for gate in gates:
            subs = _capability_node(defs, gate.side, gate.path).get("properties", {})
            if not all(value in subs for value in values):
                continue
            found = (
                Variant(
                    field=field_name,
                    value=str(value),
                    gate=Gate(gate.side, (*gate.path, str(value))),
                    handler_name=handler if default else f"{handler}_{snake_case(str(value))}",
                    params_type=str(name),
                    default=default,
                )
                for (name, _), value, default in zip(named, values, defaults, strict=True)
            )
            return tuple(sorted(found, key=lambda variant: not variant.default))  # default first
    return ()


def _capability_node(defs: dict[str, Any], side: str, path: tuple[str, ...]) -> dict[str, Any]:
    """The schema of capability ``path`` of a side (``elicitation`` -> its object)."""
    node = _capability_object(defs, side)
    for part in path:
        node = _deref(defs, node.get("properties", {}).get(part, {}))
    return node


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].replace("\n", " ").strip()


def _check_unique_names(protocol: Protocol) -> None:
    """Requests and notifications get distinct Python names (notifications are prefixed)."""
    requests = [(r.handler_name, r.method) for r in protocol.requests]
    requests += [
        (v.handler_name, f"{r.method} ({v.field} {v.value})")
        for r in protocol.requests
        for v in r.variants
        if not v.default
    ]
    groups = [requests, [(n.handler_name, n.method) for n in protocol.notifications]]
    for messages in groups:
        seen: dict[str, str] = {}
        for python_name, method in messages:
            other = seen.setdefault(python_name, method)
            if other != method:
                raise CodegenError(
                    f"methods {other} and {method} both map to the Python name "
                    f"{python_name!r}",
                    "report this schema; the naming rule needs an exception for it",
                )
