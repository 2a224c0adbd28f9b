"""Stage 3: emit pydantic v2 models with datamodel-code-generator's in-process API.

The schema is first rewritten (``rewrite``); the options below fix the style. The result is
one module: one class per definition, named as in the schema, inline objects named by
their path, snake_case fields with the wire names as aliases, and discriminated unions
wherever the schema has a const tag. :func:`index_models` then reads the emitted source
back (with ``ast``) so the templates can type stub signatures exactly as the models are.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

from .errors import CodegenError
from .rewrite import definitions_key, rewrite_for_models

MODEL_BASE_CLASS = "mcp_codegen.runtime.model.MCPModel"
# Python names for wire keys that snake-casing renders badly.
FIXED_ALIASES = {"_meta": "meta", "$schema": "schema_"}
SNAKE_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class Field:
    """One field of a generated model: Python name, wire name, type text, requiredness."""

    name: str
    wire_name: str
    annotation: str
    required: bool


@dataclass(frozen=True)
class ModelInfo:
    """A generated class (``fields`` in definition order, bases first) or a type alias."""

    name: str
    is_alias: bool
    fields: tuple[Field, ...]


def emit_models(document: dict[str, Any]) -> str:
    """Generate the models module source (unformatted by black) for one schema."""
    from datamodel_code_generator import generate
    from datamodel_code_generator.enums import (
        DataModelType,
        InputFileType,
        NamingStrategy,
        StrictTypes,
    )
    from datamodel_code_generator.format import PythonVersion
    from datamodel_code_generator.parser import LiteralType

    rewritten = rewrite_for_models(document)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = generate(
                json.dumps(rewritten),
                input_file_type=InputFileType.JsonSchema,
                output_model_type=DataModelType.PydanticV2BaseModel,
                target_python_version=PythonVersion.PY_310,
                base_class=MODEL_BASE_CLASS,
                use_union_operator=True,
                use_standard_collections=True,
                use_annotated=True,
                field_constraints=True,
                enum_field_as_literal=LiteralType.All,
                use_type_alias=True,
                collapse_root_models=False,
                use_one_literal_as_default=False,
                snake_case_field=True,
                aliases=field_aliases(rewritten),
                naming_strategy=NamingStrategy.FullPath,
                skip_root_model=True,
                keep_model_order=True,
                disable_future_imports=True,
                use_schema_description=True,
                use_field_description=True,
                use_double_quotes=True,
                disable_timestamp=True,
                formatters=[],
                type_mappings=["string+byte=string", "string+uri=string"],
                strict_types=[StrictTypes.int, StrictTypes.float, StrictTypes.bool],
            )
    except CodegenError:
        raise
    except Exception as exc:  # the library raises many types; name it and stop
        raise CodegenError(
            f"datamodel-code-generator could not turn the schema into models: "
            f"{type(exc).__name__}: {exc}",
            "check that the schema is an MCP schema; if it is the official file, report it",
        ) from exc
    if not isinstance(code, str):
        raise CodegenError(
            "datamodel-code-generator returned no single module",
            "report this together with the datamodel-code-generator version",
        )
    return strip_generator_header(code)


def field_aliases(document: dict[str, Any]) -> dict[str, str]:
    """Python names for awkward wire keys: ``_meta``, ``$schema``, reverse-DNS ``_meta`` keys.

    ``io.modelcontextprotocol/clientCapabilities`` -> ``client_capabilities``; if dropping
    the prefix would collide inside one object, the full snake-cased key is used instead.
    """
    aliases = dict(FIXED_ALIASES)
    for node in _objects(document):
        keys = [key for key in node["properties"] if "/" in key]
        short = {key: snake_case(key.rsplit("/", 1)[1]) for key in keys}
        taken = {snake_case(key) for key in node["properties"] if "/" not in key}
        for key in keys:
            clash = short[key] in taken or list(short.values()).count(short[key]) > 1
            aliases[key] = snake_case(re.sub(r"[./-]", "_", key)) if clash else short[key]
    return dict(sorted(aliases.items()))


def snake_case(name: str) -> str:
    """``listChanged`` -> ``list_changed``; ``CallTool`` -> ``call_tool``."""
    return SNAKE_BOUNDARY.sub("_", name).lower()


def strip_generator_header(code: str) -> str:
    """Drop datamodel-codegen's own comment lines (they name ``<stdin>``); ours replaces them."""
    lines = code.splitlines(keepends=True)
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return "".join(lines)


def index_models(source: str) -> dict[str, ModelInfo]:
    """Read classes, their (inherited) fields and type aliases back from emitted source."""
    tree = ast.parse(source)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    index: dict[str, ModelInfo] = {}

    def fields_of(name: str) -> tuple[Field, ...]:
        node = classes[name]
        inherited: list[Field] = []
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                inherited.extend(fields_of(base.id))
        own = [_field(statement) for statement in node.body if _is_field(statement)]
        own_names = {f.name for f in own}
        return tuple([f for f in inherited if f.name not in own_names] + own)

    for name in classes:
        index[name] = ModelInfo(name, False, fields_of(name))
    for node in tree.body:
        target = _alias_target(node)
        if target is not None:
            index[target] = ModelInfo(target, True, ())
    return index


def _is_field(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.target.id != "model_config"
    )


def _field(statement: ast.stmt) -> Field:
    assert isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
    annotation = statement.annotation
    wire_name = statement.target.id
    if (
        isinstance(annotation, ast.Subscript)
        and isinstance(annotation.value, ast.Name)
        and annotation.value.id == "Annotated"
        and isinstance(annotation.slice, ast.Tuple)
    ):
        for extra in annotation.slice.elts[1:]:
            for keyword in getattr(extra, "keywords", []):
                if keyword.arg == "alias" and isinstance(keyword.value, ast.Constant):
                    wire_name = str(keyword.value.value)
        annotation = annotation.slice.elts[0]
    return Field(
        name=statement.target.id,
        wire_name=wire_name,
        annotation=ast.unparse(annotation),
        required=statement.value is None,
    )


def _alias_target(node: ast.stmt) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        value = node.value
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "TypeAliasType"
        ):
            return target.id
    return None


def _objects(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            if isinstance(current.get("properties"), dict):
                found.append(current)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


def model_names(document: dict[str, Any]) -> list[str]:
    """The definition names of a schema, as the models module names its classes."""
    return sorted(document[definitions_key(document)])
