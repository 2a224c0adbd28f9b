"""Stage 3: emit pydantic v2 models with datamodel-code-generator's in-process API.

The schema is first rewritten (``rewrite``); the options below fix the style. The result is
one module per definition (so a program builds only the classes it uses): one class per
definition, named as in the schema, inline objects named by their path, snake_case fields
with the wire names as aliases, and discriminated unions wherever the schema has a const
tag. :func:`index_models` reads the emitted source back (with ``ast``) so the templates can
type stub signatures exactly as the models are and lay out the lazy ``models`` package.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

from .errors import CodegenError
from .escape import Code
from .names import RUNTIME_PACKAGE, snake_case
from .document import walk_schemas
from .rewrite import NULLABLE_MARK, rewrite_for_models

MODEL_BASE_CLASS = f"{RUNTIME_PACKAGE}.model.MCPModel"
#: What model code may import (``from X import ...``; ``from . import`` for sibling models).
MODEL_IMPORTS = frozenset({
    f"{RUNTIME_PACKAGE}.model", "pydantic", "typing", "typing_extensions", "datetime",
    "decimal", "uuid", "ipaddress", "pathlib",
})
#: The only calls model code may make: pydantic's field and config, type aliases (the
#: ``model_rebuild()`` of a class defined above is allowed at the top level as well).
MODEL_CALLS = frozenset({"Field", "ConfigDict", "TypeAliasType"})
#: Names a call in model code may pass as a value (``default_factory=list``).
MODEL_CALL_NAMES = frozenset({"list", "dict"})
# Python names for wire keys that snake-casing renders badly.
FIXED_ALIASES = {"_meta": "meta", "$schema": "schema_"}


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
    module: str
    is_alias: bool
    fields: tuple[Field, ...]


def emit_models(document: dict[str, Any]) -> dict[str, str]:
    """Generate the model modules (``{module name: source}``, unformatted) of one schema."""
    from datamodel_code_generator import generate
    from datamodel_code_generator.enums import ModuleSplitMode

    rewritten = rewrite_for_models(document)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = generate(
                json.dumps(rewritten),
                **model_options(field_aliases(rewritten)),
                module_split_mode=ModuleSplitMode.Single,
            )
    except CodegenError:
        raise
    except Exception as exc:  # the library raises many types; name it and stop
        raise CodegenError(
            f"datamodel-code-generator could not turn the schema into models: "
            f"{type(exc).__name__}: {exc}",
            "check that the schema is an MCP schema; if it is the official file, report it",
        ) from exc
    if not isinstance(code, dict):
        raise CodegenError(
            "datamodel-code-generator returned no module per model",
            "report this together with the datamodel-code-generator version",
        )
    modules = {}
    for path, source in code.items():
        (filename,) = path
        if filename != "__init__.py":  # empty: the lazy package init is rendered instead
            modules[filename.removesuffix(".py")] = prune_unused_imports(
                strip_generator_header(source)
            )
    return dict(sorted(modules.items()))


def model_options(aliases: dict[str, str]) -> dict[str, Any]:
    """datamodel-code-generator's options for every model this generator emits (the
    protocol packages and ``mcp-codegen tools``), with the given flat field-alias map."""
    from datamodel_code_generator.enums import (
        DataModelType,
        InputFileType,
        NamingStrategy,
        StrictTypes,
    )
    from datamodel_code_generator.format import PythonVersion
    from datamodel_code_generator.parser import LiteralType

    return {
        "input_file_type": InputFileType.JsonSchema,
        "output_model_type": DataModelType.PydanticV2BaseModel,
        "target_python_version": PythonVersion.PY_310,
        "base_class": MODEL_BASE_CLASS,
        "use_union_operator": True,
        "use_standard_collections": True,
        "use_annotated": True,
        "field_constraints": True,
        "strict_nullable": True,  # a field with a default is not nullable (resultType)
        "enum_field_as_literal": LiteralType.All,
        "use_type_alias": True,
        "collapse_root_models": False,
        # a constant field defaults to its value (the base class keeps it required when
        # parsing and always sends it)
        "use_one_literal_as_default": True,
        "field_extra_keys": {NULLABLE_MARK},
        "snake_case_field": True,
        "aliases": aliases,
        "naming_strategy": NamingStrategy.FullPath,
        "skip_root_model": True,
        "keep_model_order": True,
        "disable_future_imports": True,
        "use_schema_description": True,
        "use_field_description": True,
        "use_double_quotes": True,
        "disable_timestamp": True,
        "formatters": [],
        "type_mappings": ["string+byte=string", "string+uri=string"],
        "strict_types": [StrictTypes.int, StrictTypes.float, StrictTypes.bool],
    }


def field_aliases(document: dict[str, Any]) -> dict[str, str]:
    """Python names for awkward wire keys: ``_meta``, ``$schema``, reverse-DNS ``_meta`` keys.

    ``io.modelcontextprotocol/clientCapabilities`` -> ``client_capabilities``; if dropping
    the prefix would collide inside one object, the full snake-cased key is used instead.
    """
    aliases = dict(FIXED_ALIASES)
    for node in (n for n in walk_schemas(document) if isinstance(n.get("properties"), dict)):
        keys = [key for key in node["properties"] if "/" in key]
        short = {key: snake_case(key.rsplit("/", 1)[1]) for key in keys}
        taken = {snake_case(key) for key in node["properties"] if "/" not in key}
        for key in keys:
            clash = short[key] in taken or list(short.values()).count(short[key]) > 1
            aliases[key] = snake_case(re.sub(r"[./-]", "_", key)) if clash else short[key]
    return dict(sorted(aliases.items()))


def strip_generator_header(code: str) -> str:
    """Drop datamodel-codegen's own comment lines (they name ``<stdin>``); ours replaces them."""
    lines = code.splitlines(keepends=True)
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return "".join(lines)


def prune_unused_imports(source: str) -> str:
    """Drop names a module imports but never uses (datamodel-code-generator imports the
    base class into alias-only modules when it splits them)."""
    tree = ast.parse(source)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    used.update(_exported_names(tree))
    lines = source.splitlines(keepends=True)
    for node in reversed(tree.body):
        if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
            continue
        kept = [alias for alias in node.names if (alias.asname or alias.name) in used]
        if len(kept) == len(node.names):
            continue
        assert node.end_lineno is not None
        replacement = ast.unparse(ast.ImportFrom(node.module, kept, node.level)) + "\n"
        lines[node.lineno - 1 : node.end_lineno] = [replacement] if kept else []
    return "".join(lines)


def _exported_names(tree: ast.Module) -> set[str]:
    """The strings of a module's ``__all__`` (re-exports count as uses)."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            return {
                e.value
                for e in node.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            }
    return set()


def index_models(modules: dict[str, str]) -> dict[str, ModelInfo]:
    """Read classes, their (inherited) fields and type aliases back from emitted modules."""
    classes: dict[str, tuple[str, ast.ClassDef]] = {}
    aliases: dict[str, str] = {}
    for module, source in modules.items():
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef):
                classes[node.name] = (module, node)
            elif (target := _alias_target(node)) is not None:
                aliases[target] = module

    def fields_of(name: str) -> tuple[Field, ...]:
        node = classes[name][1]
        inherited: list[Field] = []
        for base in node.bases:
            base_name = _local_name(base)
            if base_name in classes:
                inherited.extend(fields_of(base_name))
        own = [_field(statement) for statement in node.body if _is_field(statement)]
        own_names = {f.name for f in own}
        return tuple([f for f in inherited if f.name not in own_names] + own)

    index = {name: ModelInfo(name, module, False, fields_of(name)) for name, (module, _) in classes.items()}
    index.update((name, ModelInfo(name, module, True, ())) for name, module in aliases.items())
    return dict(sorted(index.items()))


def _local_name(node: ast.expr) -> str:
    """``Result`` or ``result.Result`` -> ``Result``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


class _StripModulePrefixes(ast.NodeTransformer):
    """``content_block.ContentBlock`` -> ``ContentBlock`` inside an annotation."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id.islower():
            return ast.copy_location(ast.Name(id=node.attr, ctx=node.ctx), node)
        return self.generic_visit(node)


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
    plain = _StripModulePrefixes().visit(annotation)
    return Field(
        name=statement.target.id,
        wire_name=wire_name,
        annotation=ast.unparse(plain),
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


def checked_model_code(source: str) -> Code:
    """datamodel-code-generator's output, once its syntax tree holds nothing but model code.

    The schema's descriptions, titles, defaults, enum values and patterns reach that output
    through the library's own quoting; this is the second line: whatever the text, the
    module may only import from :data:`MODEL_IMPORTS`, define classes (docstrings, fields,
    ``model_config``), assign names (type aliases, ``__all__``) and call ``model_rebuild()``, and call only
    :data:`MODEL_CALLS` with literal arguments. ``ValueError`` names what is not.
    """
    tree = ast.parse(source)
    classes = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module not in MODEL_IMPORTS:
                raise ValueError(f"model code imports from {node.module}")
        elif isinstance(node, ast.ClassDef):
            if node.decorator_list or node.keywords:
                raise ValueError(f"model class {node.name} has decorators or keywords")
            for statement in node.body:
                if not isinstance(statement, ast.AnnAssign | ast.Assign | ast.Pass) and not _is_text(statement):
                    raise ValueError(f"model class {node.name} holds a {type(statement).__name__}")
            classes.add(node.name)
        elif isinstance(node, ast.Expr) and _is_rebuild(node.value, classes):
            continue
        elif not (_is_text(node) or isinstance(node, ast.Assign)):  # aliases, __all__
            raise ValueError(f"model code holds a top-level {type(node).__name__} (line {node.lineno})")
    for found in ast.walk(tree):
        if isinstance(found, ast.Call) and not _is_rebuild(found, classes):
            _check_call(found)
        elif isinstance(found, ast.Lambda | ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom
                        | ast.comprehension | ast.Import | ast.Global | ast.Nonlocal):
            raise ValueError(f"model code holds a {type(found).__name__}")
    return Code(source)


def _is_text(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _is_rebuild(node: ast.expr, classes: set[str]) -> bool:
    """``Model.model_rebuild()`` of a class defined above."""
    return (isinstance(node, ast.Call) and not node.args and not node.keywords
            and isinstance(node.func, ast.Attribute) and node.func.attr == "model_rebuild"
            and isinstance(node.func.value, ast.Name) and node.func.value.id in classes)


def _check_call(call: ast.Call) -> None:
    name = call.func.id if isinstance(call.func, ast.Name) else ast.unparse(call.func)
    if name not in MODEL_CALLS:
        raise ValueError(f"model code calls {name} (line {call.lineno})")
    if name == "TypeAliasType":
        return  # its arguments are the alias's name and a type expression
    for value in [*call.args, *(keyword.value for keyword in call.keywords)]:
        for part in ast.walk(value):
            if isinstance(part, ast.Name) and part.id not in MODEL_CALL_NAMES:
                raise ValueError(f"model code passes {part.id} to {name} (line {call.lineno})")
            if isinstance(part, ast.Attribute | ast.Subscript | ast.Starred):
                raise ValueError(f"model code passes {ast.unparse(part)} to {name} (line {call.lineno})")
