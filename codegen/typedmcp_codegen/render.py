"""Stage 4: render the stub modules from jinja2 templates.

This module turns the protocol model and the model index into plain view data
(signatures, imports, docstrings); the templates only lay it out.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass
from importlib import resources

import jinja2

from . import __version__
from .analyse import Direction, Notification, Protocol, Request, Variant
from .document import HANDSHAKE_MESSAGES
from .errors import CodegenError
from .escape import Code, comment, docstring, guard, identifier, string_literal
from .extension_pins import ExtensionPin
from .models import Field, ModelInfo, checked_model_code
from .names import RUNTIME_INTERFACE, RUNTIME_PACKAGE
from .pins import package_name

TYPING_NAMES = frozenset({"Any", "Literal"})
ABC_NAMES = frozenset({"Mapping"})
#: What a send method's ``meta`` takes besides its model (from ``collections.abc``).
MAPPING_ANNOTATION = "Mapping[str, Any]"
# The models use pydantic's strict scalars; signatures show the plain types they accept.
PLAIN_SCALARS = {"StrictInt": "int", "StrictFloat": "float", "StrictBool": "bool", "StrictStr": "str"}
SCALAR_NAME = re.compile(r"\b(" + "|".join(PLAIN_SCALARS) + r")\b")
STUB_CLASS_NAMES = frozenset({"Client", "ClientHandlers", "ServerHandlers", "ClientPeer"})


@dataclass(frozen=True)
class Argument:
    """One keyword argument of a typed send method."""

    name: str
    wire_name: str
    annotation: str
    required: bool


@dataclass(frozen=True)
class Operation:
    """One method of a generated class, as the templates lay it out."""

    name: str
    method: str
    spec_name: str
    doc: str
    params_annotation: str | None
    arguments: tuple[Argument, ...] | None
    returns: str
    #: The method takes ``on_progress=``: a request the client sends whose ``_meta`` can
    #: carry a ``progressToken``.
    progress: bool = False


@dataclass(frozen=True)
class PackageHeader:
    """What a package states about its schema: every file's header has the revision, era
    and how to regenerate; only ``__init__.py`` has the sha256 (so a changed schema changes
    only the files it touches). ``known``: the revision is in ``pins.json`` (``draft`` is,
    unpinned), so ``--version`` alone finds its schema again. ``extension``: the package is
    an extension's (its pin), not a core revision's."""

    revision: str
    era: str
    sha256: str
    pinned: bool
    known: bool = True
    extension: ExtensionPin | None = None


def render_stubs(
    protocol: Protocol, index: dict[str, ModelInfo], header: PackageHeader
) -> dict[str, str]:
    """Render ``__init__.py``, ``dispatch.py``, ``client.py`` and ``server.py``."""
    clash = STUB_CLASS_NAMES & set(index)
    if clash:
        raise CodegenError(
            f"the schema defines {sorted(clash)}, which the stub classes are named",
            "report this schema; the stub class names need an exception",
        )
    environment = _environment()
    views: dict[str, list[Operation]] = {
        "client_requests": _sendable(
            _requests(protocol, index, Direction.CLIENT_TO_SERVER, outbound=True)
        ),
        "client_notifications": _sendable(
            _notifications(protocol, index, Direction.CLIENT_TO_SERVER, True)
        ),
        "client_request_handlers": _requests(
            protocol, index, Direction.SERVER_TO_CLIENT, outbound=False
        ),
        "client_notification_handlers": _notifications(
            protocol, index, Direction.SERVER_TO_CLIENT, False
        ),
        "server_requests": _requests(protocol, index, Direction.SERVER_TO_CLIENT, outbound=True),
        "server_notifications": _notifications(protocol, index, Direction.SERVER_TO_CLIENT, True),
        "server_request_handlers": _requests(
            protocol, index, Direction.CLIENT_TO_SERVER, outbound=False
        ),
        "server_notification_handlers": _notifications(
            protocol, index, Direction.CLIENT_TO_SERVER, False
        ),
    }
    common = {
        "header": header,
        "package": package_name(header.revision),
        "generator_version": __version__,
        "runtime_interface": RUNTIME_INTERFACE,
    }
    client_ops = [*views["client_requests"], *views["client_notifications"]]
    client_handlers = [*views["client_request_handlers"], *views["client_notification_handlers"]]
    server_ops = [*views["server_requests"], *views["server_notifications"]]
    server_handlers = [*views["server_request_handlers"], *views["server_notification_handlers"]]
    return {
        "__init__.py": environment.get_template("package_init.py.j2").render(**common),
        "dispatch.py": environment.get_template("dispatch.py.j2").render(
            requests=[_request_entry(r) for r in protocol.requests],
            has_variants=any(r.variants for r in protocol.requests),
            notifications=[_notification_entry(n) for n in protocol.notifications],
            **common,
        ),
        "client.py": environment.get_template("client.py.j2").render(
            typing_imports=_typing_imports([*client_ops, *client_handlers]),
            abc_imports=_abc_imports([*client_ops, *client_handlers]),
            outbound=views["client_requests"],
            outbound_notifications=views["client_notifications"],
            request_handlers=views["client_request_handlers"],
            notification_handlers=views["client_notification_handlers"],
            spec_imports=_spec_imports(client_ops, client_handlers),
            runtime_imports=_runtime_imports(client_ops, client_handlers, "ClientHandlersBase"),
            **common,
        ),
        "server.py": environment.get_template("server.py.j2").render(
            typing_imports=_typing_imports([*server_ops, *server_handlers]),
            abc_imports=_abc_imports([*server_ops, *server_handlers]),
            outbound=views["server_requests"],
            outbound_notifications=views["server_notifications"],
            request_handlers=views["server_request_handlers"],
            notification_handlers=views["server_notification_handlers"],
            spec_imports=_spec_imports(server_ops, server_handlers),
            runtime_imports=_runtime_imports(server_ops, server_handlers, "ServerHandlersBase"),
            **common,
        ),
    }


def render_models(
    header: PackageHeader, modules: dict[str, str], index: dict[str, ModelInfo]
) -> dict[str, str]:
    """The ``models`` package: a lazy ``__init__`` and one module per definition."""
    environment = _environment()
    files = {
        f"models/{module}.py": environment.get_template("models.py.j2").render(
            header=header, source=_checked(module, source)
        )
        for module, source in modules.items()
    }
    names = [(name, info.module) for name, info in index.items()]
    files["models/__init__.py"] = environment.get_template("models_init.py.j2").render(
        header=header, names=names
    )
    return files


def _checked(module: str, source: str) -> Code:
    try:
        return checked_model_code(source)
    except ValueError as exc:
        raise CodegenError(
            f"the models of {module} hold code a model does not need: {exc}",
            "check the schema's descriptions and names; if it is the official file, report it",
        ) from exc


def render_extension_init(header: PackageHeader) -> str:
    """The ``__init__.py`` of an extension's package."""
    return _environment().get_template("extension_init.py.j2").render(
        header=header, generator_version=__version__, runtime_interface=RUNTIME_INTERFACE
    )


def extension_dispatch(
    header: PackageHeader, requests: tuple[Request, ...], notifications: tuple[Notification, ...]
) -> str:
    """The ``dispatch.py`` of an extension's package (the core revision's template)."""
    return _environment().get_template("dispatch.py.j2").render(
        header=header,
        requests=[_request_entry(r) for r in requests],
        has_variants=False,
        has_gates=any(r.gates for r in requests) or any(n.gates for n in notifications),
        notifications=[_notification_entry(n) for n in notifications],
    )


def render_extensions_root(pins: tuple[ExtensionPin, ...]) -> str:
    """The ``extensions/__init__.py`` of the folder holding the extensions' packages."""
    return _environment().get_template("extensions_init.py.j2").render(pins=pins)


def render_root_init(revisions: list[PackageHeader]) -> str:
    """The ``__init__.py`` of a folder holding several revision packages."""
    packages = [(h, package_name(h.revision)) for h in revisions]
    return _environment().get_template("root_init.py.j2").render(packages=packages)


def _environment() -> jinja2.Environment:
    loader = jinja2.FunctionLoader(
        lambda name: resources.files("typedmcp_codegen.templates").joinpath(name).read_text("utf-8")
    )
    environment = jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=guard,
    )
    environment.filters.update(
        comment=comment, docstring=docstring, literal=string_literal, identifier=identifier
    )
    environment.globals["runtime"] = RUNTIME_PACKAGE
    return environment


def _sent_by(direction: Direction, sender: Direction) -> bool:
    return direction in (sender, Direction.BOTH)


def spec_name(message: Request | Notification) -> str:
    """The dispatch-table constant of a message: ``CALL_TOOL``, ``PROGRESS_NOTIFICATION``."""
    suffix = "_NOTIFICATION" if isinstance(message, Notification) else ""
    return message.handler_name.upper() + suffix


def _requests(
    protocol: Protocol, index: dict[str, ModelInfo], sender: Direction, outbound: bool
) -> list[Operation]:
    operations = []
    for request in protocol.requests:
        if not _sent_by(request.direction, sender):
            continue
        result = request.result_type
        returns = result if outbound else " | ".join((result, *request.alternative_result_types))
        operation = _operation(request, index, request.handler_name, returns, outbound)
        if outbound and sender is Direction.CLIENT_TO_SERVER and _carries_progress_token(request, index):
            operation = dataclasses.replace(operation, progress=True)
        operations.append(operation)
        if not outbound:
            operations += [
                _variant_hook(request, variant, index, returns)
                for variant in request.variants
                if not variant.default
            ]
    return operations


def _carries_progress_token(request: Request, index: dict[str, ModelInfo]) -> bool:
    """Whether the request's ``_meta`` model has a ``progressToken`` field."""
    info = index.get(request.params_type) if request.params_type is not None else None
    if info is None or info.is_alias:
        return False
    for field in info.fields:
        if field.wire_name == "_meta":
            names = _names_in([field.annotation])
            return any(
                meta.wire_name == "progressToken"
                for name in names
                if name in index
                for meta in index[name].fields
            )
    return False


def _sendable(operations: list[Operation]) -> list[Operation]:
    """The send methods a user may call: none for the handshake, which the runtime runs."""
    return [operation for operation in operations if operation.method not in HANDSHAKE_MESSAGES]


def _variant_hook(
    request: Request, variant: Variant, index: dict[str, ModelInfo], returns: str
) -> Operation:
    """The handler of a variant of a request (``elicit_url``): implementing it is what
    declares the variant's capability."""
    main = next((v for v in request.variants if v.default), None)
    default = f" Other requests (``{variant.field}`` absent or ``\"{main.value}\"``) go to ``{request.handler_name}``." if main else ""
    doc = (
        f"Answer ``{request.method}`` with ``{variant.field}: \"{variant.value}\"``. "
        f"Implementing this hook declares the capability ``{'.'.join(variant.gate.path)}``; "
        f"a peer that sends this form to a receiver without it is refused (-32602).{default}"
    )
    return Operation(
        name=variant.handler_name,
        method=request.method,
        spec_name=spec_name(request),
        doc=docstring(doc),
        params_annotation=qualify(variant.params_type, index),
        arguments=None,
        returns=qualify(returns, index),
    )


def _notifications(
    protocol: Protocol, index: dict[str, ModelInfo], sender: Direction, outbound: bool
) -> list[Operation]:
    operations = []
    for notification in protocol.notifications:
        if not _sent_by(notification.direction, sender):
            continue
        prefix = "send_" if outbound else "on_"
        name = prefix + notification.handler_name
        operations.append(_operation(notification, index, name, "None", outbound))
    return operations


def _operation(
    message: Request | Notification,
    index: dict[str, ModelInfo],
    name: str,
    returns: str,
    outbound: bool,
) -> Operation:
    params_type = message.params_type
    annotation = None
    arguments = None
    if params_type is not None:
        info = index.get(params_type)
        if info is None:
            raise CodegenError(
                f"{message.method}: params type {params_type} is not among the generated models",
                "report this schema; the analysis and the model names disagree",
            )
        annotation = qualify(params_type, index)
        annotation = annotation if message.params_required else Code(f"{annotation} | None")
        if outbound and not info.is_alias:
            arguments = tuple(
                Argument(
                    name=f.name,
                    wire_name=f.wire_name,
                    annotation=_meta_argument(
                        qualify(
                            _plain(f.annotation if _required(f) else _optional(f.annotation)),
                            index,
                        ),
                        f,
                    ),
                    required=_required(f),
                )
                for f in sorted(info.fields, key=_argument_order)
            )
    return Operation(
        name=name,
        method=message.method,
        spec_name=spec_name(message),
        doc=docstring(message.description or f"``{message.method}``."),
        params_annotation=annotation,
        arguments=arguments,
        returns=qualify(returns, index),
    )


def _meta_argument(annotation: str, field: Field) -> str:
    """``meta`` also takes a plain mapping: ``meta={"progressToken": token}``. The meta
    model of 2026-07-28 requires what the runtime fills in itself (the protocol version and
    the client's capabilities), so a caller could not build it; the runtime checks the
    mapping against the model before sending."""
    if field.wire_name != "_meta":
        return annotation
    return Code(annotation.replace(" | None", f" | {MAPPING_ANNOTATION} | None"))


def _argument_order(field: Field) -> tuple[bool, bool]:
    """Required arguments first, ``meta`` last, otherwise the models' order."""
    return (not _required(field), field.wire_name == "_meta")


def _required(field: Field) -> bool:
    """Required in a send signature; ``_meta`` never is (the runtime fills its parts)."""
    return field.required and field.wire_name != "_meta"


class _QualifyModels(ast.NodeTransformer):
    """``CallToolResult | None`` -> ``models.CallToolResult | None``."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            qualified = ast.Attribute(ast.Name("models", ast.Load()), node.id, ast.Load())
            return ast.copy_location(qualified, node)
        return node


def qualify(annotation: str, index: dict[str, ModelInfo]) -> Code:
    """Refer to model names through the lazy ``models`` package, so annotations resolve
    (``typing.get_type_hints``) without the stub module building any class at import."""
    tree = ast.parse(annotation, mode="eval")
    return Code(ast.unparse(_QualifyModels(set(index)).visit(tree)))


def _plain(annotation: str) -> str:
    """``StrictInt | None`` -> ``int | None``."""
    return SCALAR_NAME.sub(lambda match: PLAIN_SCALARS[match.group(1)], annotation)


def _optional(annotation: str) -> str:
    return annotation if annotation.endswith("| None") else f"{annotation} | None"


def _names_in(annotations: list[str]) -> set[str]:
    names: set[str] = set()
    for annotation in annotations:
        for node in ast.walk(ast.parse(annotation, mode="eval")):
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def _annotations(operations: list[Operation]) -> list[str]:
    found = []
    for operation in operations:
        found.append(operation.returns)
        if operation.arguments is not None:
            found.extend(argument.annotation for argument in operation.arguments)
        elif operation.params_annotation:
            found.append(operation.params_annotation)
    return found


def _typing_imports(operations: list[Operation]) -> list[str]:
    return sorted(_names_in(_annotations(operations)) & TYPING_NAMES)


def _abc_imports(operations: list[Operation]) -> list[str]:
    return sorted(_names_in(_annotations(operations)) & ABC_NAMES)


def _spec_imports(outbound: list[Operation], handlers: list[Operation]) -> list[str]:
    """Specs the module names: every send method, and request handlers (method not found)."""
    used = [*outbound, *(op for op in handlers if op.returns != "None")]
    return sorted({operation.spec_name for operation in used})


def _runtime_imports(
    outbound: list[Operation], handlers: list[Operation], handlers_base: str
) -> list[str]:
    names = {handlers_base, "Outbound", "RequestContext"}
    if any(op.returns != "None" for op in handlers):
        names.add("MethodNotFound")
    if any(op.arguments is not None for op in outbound):
        names.add("wire_params")
    if any(op.arguments is None and op.params_annotation for op in outbound):
        names.add("model_params")
    if any(op.progress for op in outbound):
        names.add("ProgressCallback")
    return sorted(names)


def _request_entry(request: Request) -> dict[str, object]:
    return {
        "name": spec_name(request),
        "message": request,
        "alternatives": request.alternative_result_types,
        "doc": docstring(request.description or f"``{request.method}``."),
    }


def _notification_entry(notification: Notification) -> dict[str, object]:
    return {
        "name": spec_name(notification),
        "message": notification,
        "doc": docstring(notification.description or f"``{notification.method}``."),
    }
