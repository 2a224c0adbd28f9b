"""``mcp-codegen tools``: the second pipeline, over the same stages as the protocol packages.

snapshot (``toolset``) -> one schema document per tool -> the models stage's options,
rewrites and read-back (``models``) -> jinja2 templates (``render``'s environment) -> black
(``format``) -> the in-memory file map that ``output`` writes atomically or checks.

A tool whose schemas datamodel-code-generator cannot turn into models (or whose input is not
an object) is typed ``dict[str, Any]`` instead, with a warning naming it; the rest goes on.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import jinja2

from . import __version__
from .document import walk_schemas
from .errors import CodegenError
from .format import format_files, format_source
from .models import (
    ModelInfo, checked_model_code, index_models, model_options, prune_unused_imports, strip_generator_header,
)
from .pins import PinTable, package_name
from .escape import Code, comment, docstring, identifier, string_literal
from .render import _environment, _optional, _plain
from .rewrite import add_discriminators, mark_nullable_optionals, open_objects, widen_number
from .toolset import PARAMS, RESULT, Tool, ToolSet, reserved_aliases, tool_document

TYPING_NAMES = frozenset({"Any", "Literal", "Optional", "Union"})
#: The names an argument's type may be made of for a call to send its value as given.
JSON_VALUE_NAMES = frozenset({
    "str", "int", "float", "bool", "None", "Literal", "list", "dict",
    "StrictStr", "StrictInt", "StrictFloat", "StrictBool",
})
#: Revisions whose ``CallToolResult.content`` items are ``CallToolResultContent``.
OLD_CONTENT_REVISIONS = frozenset({"2024-11-05", "2025-03-26"})
#: ``ServerHandlers.list_tools``'s params type per revision (the default: 2025-11-25's).
LIST_TOOLS_PARAMS = {
    "2025-06-18": "models.ListToolsRequestParams | None",
    "2026-07-28": "models.PaginatedRequestParams",
}
#: Below this many tools, models are emitted in this process (a pool costs more than it saves).
POOL_THRESHOLD = 40
#: The first line of a ``Tools`` method rendered on its own (``tools_method.py.j2``).
METHOD_WRAPPER = "class Tools:\n"
#: The same for an abstract method of ``contract.py`` (``tools_contract_method.py.j2``).
CONTRACT_WRAPPER = "class ToolsContract:\n"


@dataclass(frozen=True)
class ToolArgument:
    """One keyword argument of a tool's function and ``Tools`` method."""

    name: Code
    annotation: Code
    qualified: Code
    required: bool
    #: The argument's wire name as a Python string literal.
    wire_literal: Code


@dataclass(frozen=True)
class ToolModels:
    """What the models stage made of one tool: the model code, its imports, the index."""

    code: Code
    imports: tuple[tuple[str, tuple[str, ...]], ...]
    index: dict[str, ModelInfo]
    warning: str | None


def emit_tool_models(tool: Tool) -> ToolModels:
    """``Params``/``Result`` models of one tool, or the empty fallback with a warning."""
    from datamodel_code_generator import generate

    document = tool_document(tool)
    outside = sorted({node["$ref"] for node in walk_schemas(document)
                      if isinstance(node.get("$ref"), str) and not node["$ref"].startswith("#")})
    if outside:  # never fetched: a generated package must not depend on the network
        return _fallback(tool, f"it refers to other documents: {', '.join(outside)}")
    for step in (open_objects, widen_number, add_discriminators, mark_nullable_optionals):
        step(document)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = generate(json.dumps(document), **model_options(reserved_aliases(document)))
        if not isinstance(code, str):
            raise ValueError("no single module came back")
        code = checked_model_code(prune_unused_imports(strip_generator_header(code)))
        index = index_models({"m": code})
    except Exception as exc:  # the library raises many types: fall back for this tool only
        return _fallback(tool, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    wanted = [PARAMS] + ([RESULT] if tool.output_schema is not None else [])
    not_classes = [name for name in wanted if name not in index or index[name].is_alias]
    if not_classes:
        return _fallback(tool, f"{' and '.join(not_classes)} is not an object schema")
    body, imports = _split_imports(code)
    return ToolModels(body, imports, index, None)


def _fallback(tool: Tool, reason: str) -> ToolModels:
    """The warning goes to the terminal and into a comment: the server's text in it (a
    ``$ref``, the library's message) is on one printable line."""
    warning = (f"tool {tool.name!r}: its schema could not be turned into models ({comment(reason)}); "
               "its arguments and structured result are typed dict[str, Any]")
    return ToolModels(Code(""), (), {}, warning)


def _split_imports(code: Code) -> tuple[Code, tuple[tuple[str, tuple[str, ...]], ...]]:
    """The module's top-level ``from x import y`` statements apart from the rest (checked
    model code: the rest is too)."""
    tree = ast.parse(code)
    imports: dict[str, set[str]] = {}
    lines = code.splitlines(keepends=True)
    for node in reversed(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imports.setdefault(node.module, set()).update(a.name for a in node.names)
            assert node.end_lineno is not None
            del lines[node.lineno - 1 : node.end_lineno]
        elif isinstance(node, ast.Import):
            raise ValueError("unexpected plain import in the model code")
    return Code("".join(lines).strip() + "\n"), tuple(sorted((m, tuple(sorted(n))) for m, n in imports.items()))


def generate_tools_package(toolset: ToolSet, pins: PinTable, workers: int | None = None) -> tuple[dict[str, str], list[str]]:
    """The file map of a tools package and the warnings met on the way.

    Each tool's module is built (models, template, black) on its own, in a process pool
    when there are many tools and cores; the package init and ``_support`` come last."""
    revision = _result_revision(toolset.revision, pins)
    environment = _environment()
    header = Code(environment.get_template("tools_header.j2").render(toolset=toolset))
    jobs = [(tool, header) for tool in toolset.tools]
    workers = workers or min(8, os.cpu_count() or 1)
    if len(jobs) >= POOL_THRESHOLD and workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            built = list(pool.map(build_tool_module, jobs, chunksize=max(1, len(jobs) // (workers * 8))))
    else:
        built = [build_tool_module(job) for job in jobs]
    views = [view for view, _ in built]
    common = {
        "header": header,
        "toolset": toolset,
        "models_package": f"mcp_generated.{package_name(revision)}.models",
        "content_type": "CallToolResultContent" if revision in OLD_CONTENT_REVISIONS else "ContentBlock",
        "generator_version": __version__,
    }
    files = {"__init__.py": environment.get_template("tools_init.py.j2").render(
        tools=views, imports=_init_imports(views), **common)}
    files["_support.py"] = environment.get_template("tools_support.py.j2").render(**common)
    if revision not in OLD_CONTENT_REVISIONS:  # structuredContent exists from 2025-06-18
        files["contract.py"] = environment.get_template("tools_contract.py.j2").render(
            tools=views, server_package=f"mcp_generated.{package_name(revision)}",
            list_params=Code(LIST_TOOLS_PARAMS.get(revision, "models.PaginatedRequestParams | None")),
            **common)
    files = format_files(files)
    # each method was formatted on its own (in the pool): black would put each one after
    # exactly one blank line in the class, which is how they are joined
    files["__init__.py"] += "".join("\n" + view["method"] for view in views)
    if "contract.py" in files:
        files["contract.py"] += "".join("\n" + view["abstract"] for view in views)
    files.update((f"{view['module']}.py", text) for view, text in built)
    files["tools.json"] = toolset.text
    files["py.typed"] = ""
    warnings_met = [view["warning"] for view in views if view["warning"]]
    return dict(sorted(files.items())), warnings_met


@functools.cache
def _template(name: str) -> jinja2.Template:
    """A per-tool template, compiled once per process."""
    return _environment().get_template(name)


def build_tool_module(job: tuple[Tool, Code]) -> tuple[dict[str, Any], str]:
    """One tool's formatted module and the view data the package init needs of it."""
    tool, header = job
    view = _tool_view(tool, emit_tool_models(tool))
    text = _template("tools_module.py.j2").render(tool=view, header=header)
    view["code"] = Code("")  # only the module needs it
    method = format_source("__init__.py", _template("tools_method.py.j2").render(tool=view))
    view["method"] = method.removeprefix(METHOD_WRAPPER)
    abstract = format_source("contract.py", _template("tools_contract_method.py.j2").render(tool=view))
    view["abstract"] = abstract.removeprefix(CONTRACT_WRAPPER)
    return view, format_source(f"{tool.module}.py", text)


def _result_revision(revision: str | None, pins: PinTable) -> str:
    """The revision whose ``CallToolResult`` the package returns: the negotiated one when
    it is released, else the newest released."""
    released = [pin.revision for pin in pins.released]
    if revision in released:
        assert revision is not None
        return revision
    found = pins.find(pins.latest)
    if found is None:
        raise CodegenError("pins.json names no latest revision", "reinstall mcp-codegen")
    return found.revision


def _tool_view(tool: Tool, models: ToolModels) -> dict[str, Any]:
    """What the templates need to lay out one tool."""
    fallback = models.warning is not None
    arguments: list[ToolArgument] = []
    imports = dict(models.imports)
    imported = {name: module for module, names in imports.items() for name in names}
    init_imports: dict[str, set[str]] = {}
    if not fallback:
        local = set(models.index)
        for field in sorted(models.index[PARAMS].fields, key=lambda f: not f.required):
            annotation = Code(_plain(field.annotation if field.required else _optional(field.annotation)))
            for name in _names([annotation]) - local:
                if name in imported:
                    init_imports.setdefault(imported[name], set()).add(name)
            arguments.append(ToolArgument(
                name=identifier(field.name),
                annotation=annotation,
                qualified=_qualify(annotation, local, "_" + tool.module),
                required=field.required,
                wire_literal=string_literal(field.wire_name),
            ))
    typing_names = set(imports.get("typing", ())) | (_names([a.annotation for a in arguments]) & TYPING_NAMES)
    if fallback:
        typing_names.add("Any")
        init_imports.setdefault("typing", set()).add("Any")
    if typing_names:
        imports["typing"] = tuple(sorted(typing_names))
    return {
        "name": tool.name,
        "name_literal": string_literal(tool.name),
        "module": identifier(tool.module),
        "doc": docstring(_tool_doc(tool)),
        "fallback": fallback,
        "warning": models.warning,
        "has_result": tool.output_schema is not None,
        "code": models.code,
        "imports": sorted(imports.items()),
        "arguments": arguments,
        "sent_as_given": not fallback and _sent_as_given(tool, arguments),
        "init_imports": init_imports,
    }


def _sent_as_given(tool: Tool, arguments: list[ToolArgument]) -> bool:
    """Whether a call can send its arguments as given (a dict of wire names) instead of
    building ``Params`` and dumping it: every argument's type is made of JSON values only
    (:data:`JSON_VALUE_NAMES`: no model, date or URL to dump, no ``Any`` that may hold one)
    and no property is a constant (``Params`` fills those in). The server checks the
    arguments against the tool's ``inputSchema`` either way; mypy checks the call."""
    properties = tool.input_schema.get("properties")
    for schema in (properties.values() if isinstance(properties, dict) else ()):
        if isinstance(schema, dict) and ("const" in schema or len(schema.get("enum") or ((), ())) == 1):
            return False
    return all(_names([argument.annotation]) <= JSON_VALUE_NAMES for argument in arguments)


def _tool_doc(tool: Tool) -> str:
    """Title, description and annotations of a tool, as its docstring."""
    parts = [tool.title or f"The tool ``{tool.name}``."]
    if tool.description and tool.description != tool.title:
        parts.append(tool.description.strip())
    hints = [f"{key}={json.dumps(value)}" for key, value in sorted(tool.annotations.items()) if key != "title"]
    if hints:
        parts.append("Annotations: " + ", ".join(hints))
    parts.append(f"MCP tool name: ``{tool.name}``")
    return "\n\n".join(parts)


class _Qualify(ast.NodeTransformer):
    def __init__(self, names: set[str], module: str) -> None:
        self.names = names
        self.module = module

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            return ast.copy_location(ast.Attribute(ast.Name(self.module, ast.Load()), node.id, ast.Load()), node)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        """A forward reference (``"Params"`` of a recursive model) needs no quotes there."""
        if isinstance(node.value, str) and node.value in self.names:
            return ast.copy_location(ast.Attribute(ast.Name(self.module, ast.Load()), node.value, ast.Load()), node)
        return node


def _qualify(annotation: str, names: set[str], module: str) -> Code:
    """``Loc | None`` -> ``_get_sum.Loc | None`` (the package init names each tool module)."""
    return Code(ast.unparse(_Qualify(names, module).visit(ast.parse(annotation, mode="eval"))))


def _names(annotations: list[str]) -> set[str]:
    return {node.id for annotation in annotations
            for node in ast.walk(ast.parse(annotation, mode="eval"))
            if isinstance(node, ast.Name)}


def _init_imports(views: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """What the package init imports for the argument annotations of every tool."""
    found: dict[str, set[str]] = {"typing": {"Final", "overload"}}
    for view in views:
        for module, names in view["init_imports"].items():
            found.setdefault(module, set()).update(names)
    return sorted((module, sorted(names)) for module, names in found.items())
