"""The ``tools`` module's type stubs, written from the tools' schemas (the runtime's own
writer: ``mcp-codegen tools`` derives its signatures with datamodel-code-generator, which
the runtime never imports, so this is the small subset a type checker needs).

Each tool becomes ``async def <name>(*, <argument>: <type>, ...) -> <result>``:

* the name is the snake_case of the exported name (the rule of ``mcp-codegen tools``:
  camel humps split, every run of other characters one ``_``, a leading digit gets
  ``tool_``, a keyword or builtin a trailing ``_``; two tools mapping to one name: the one
  that already is that name keeps it, the others get ``_`` and 8 hex digits of the sha256
  of their own name);
* required arguments first, then optional ones with ``= None`` (the tool's default is
  said in the docstring); an inputSchema whose property names are not all identifiers
  (``from``, ``user-id``) takes ``**arguments: Any`` instead;
* JSON Schema types map to ``str``, ``int``, ``float``, ``bool``, ``None``,
  ``list[...]``, ``dict[str, ...]``, ``Literal[...]`` for an ``enum`` or ``const``, unions
  for ``anyOf``/``oneOf``/type lists, ``$ref`` to ``$defs`` followed; anything else ``Any``;
* the result of a tool with an outputSchema is a class per object schema (attribute
  access, nested objects are classes too, named after their path); a tool without one
  answers the text of its content, ``str``.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_WORD = re.compile(r"[^0-9a-zA-Z]+")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(
    name for name in dir(builtins) if not name.startswith("_")
)
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
#: the output schema keys saying the structured result wraps the value as ``{"result": ...}``
WRAP_KEYS = ("x-typedmcp-wrapped", "x-fastmcp-wrap-result")
#: the most levels of nested schemas followed (deeper: ``Any``)
MAX_DEPTH = 8


def python_name(name: str) -> str:
    """``notes__addNote`` -> ``notes_add_note`` (see the module doc)."""
    words = _NOT_WORD.sub("_", _CAMEL_HUMP.sub("_", name)).strip("_").lower() or "tool"
    if words[0].isdigit():
        words = f"tool_{words}"
    return f"{words}_" if words in RESERVED else words


def function_names(names: Iterable[str]) -> dict[str, str]:
    """Exported tool name -> its function's name, unique, independent of order."""
    wanted = {name: python_name(name) for name in names}
    taken: dict[str, list[str]] = {}
    for name, python in wanted.items():
        taken.setdefault(python, []).append(name)
    out = {}
    for name, python in wanted.items():
        if len(taken[python]) > 1 and name != python:
            python = f"{python}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"
        out[name] = python
    return out


def _class_name(path: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", path) if part) or "Result"


@dataclass(frozen=True)
class ToolStub:
    """One tool's function in the stubs: its exported ``name``, the ``function`` name the
    code calls, whether its result is an object (``structured``) and its stub text."""

    name: str
    function: str
    structured: bool
    text: str
    #: the structured result is ``{"result": ...}`` wrapping the value (the schema's
    #: ``x-typedmcp-wrapped`` or FastMCP's ``x-fastmcp-wrap-result``): the code gets the value
    unwrap: bool = False


class _Writer:
    """Annotations of one schema document; the classes it needed, in order."""

    def __init__(self, document: Mapping[str, Any], taken: set[str]) -> None:
        self.document = document
        self.taken = taken
        self.classes: list[str] = []

    def resolve(self, schema: Any) -> Any:
        if isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            ref: str = schema["$ref"]
            for prefix in ("#/$defs/", "#/definitions/"):
                if ref.startswith(prefix):
                    found = self.document.get(prefix[2:-1], {}).get(ref[len(prefix):])
                    if isinstance(found, Mapping):
                        return found
        return schema

    def annotation(self, schema: Any, path: str, depth: int = 0) -> str:
        schema = self.resolve(schema)
        if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
            return "Any"
        if "const" in schema:
            return f"Literal[{_python(schema['const'])}]" if _literal(schema["const"]) else "Any"
        enum = schema.get("enum")
        if isinstance(enum, list) and enum and all(_literal(v) for v in enum):
            return f"Literal[{', '.join(_python(v) for v in enum)}]"
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return _union(self.annotation(o, f"{path}{n}", depth + 1) for n, o in enumerate(options))
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union(self.annotation({**schema, "type": k}, path, depth + 1) for k in kind)
        if kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "array":
            return f"list[{self.annotation(schema.get('items'), f'{path}Item', depth + 1)}]"
        if kind == "object" or "properties" in schema:
            properties = schema.get("properties")
            if isinstance(properties, Mapping) and properties and all(_identifier(k) for k in properties):
                return self.object_class(schema, path, depth)
            extra = schema.get("additionalProperties")
            value = self.annotation(extra, f"{path}Value", depth + 1) if isinstance(extra, Mapping) else "Any"
            return f"dict[str, {value}]"
        return "Any"

    def object_class(self, schema: Mapping[str, Any], path: str, depth: int) -> str:
        name = _class_name(path)
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        required = set(schema.get("required") or ())
        lines = [f"class {name}:"]
        description = schema.get("description")
        if isinstance(description, str) and description.strip():
            lines.append(f"    {_docstring(description)}")
        for key, value in schema["properties"].items():
            annotation = self.annotation(value, f"{path}_{key}", depth + 1)
            lines.append(f"    {key}: {annotation if key in required else _union([annotation, 'None'])}")
        self.classes.append("\n".join(lines))
        return name


def _literal(value: Any) -> bool:
    """Whether ``value`` may be in a ``Literal[...]`` (floats may not)."""
    return value is None or isinstance(value, (str, int, bool))


def _python(value: Any) -> str:
    """A literal's Python text: a string in double quotes (JSON's escapes are Python's)."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _identifier(name: str) -> bool:
    return bool(_IDENTIFIER.match(name)) and not keyword.iskeyword(name)


def _members(annotation: str) -> list[str]:
    """The members of a union annotation, split only outside brackets and strings."""
    members, depth, quoted, start = [], 0, False, 0
    for index, char in enumerate(annotation):
        if char == '"' and (index == 0 or annotation[index - 1] != "\\"):
            quoted = not quoted
        elif not quoted and char == "[":
            depth += 1
        elif not quoted and char == "]":
            depth -= 1
        elif not quoted and depth == 0 and annotation.startswith(" | ", index):
            members.append(annotation[start:index])
            start = index + 3
    members.append(annotation[start:])
    return members


def _union(parts: Iterable[str]) -> str:
    seen = list(dict.fromkeys(member for part in parts for member in _members(part)))
    return "Any" if "Any" in seen else " | ".join(seen)


def _docstring(text: str, indent: str = "    ") -> str:
    body = text.strip().replace("\\", "\\\\").replace('"', '\\"')
    return '"""' + body.replace("\n", "\n" + indent) + '"""'


def tool_stub(name: str, function: str, definition: Mapping[str, Any], taken: set[str]) -> tuple[ToolStub, list[str]]:
    """The stub of one tool and the classes it needs."""
    base = _class_name(function)
    inputs = definition.get("inputSchema")
    inputs = inputs if isinstance(inputs, Mapping) else {}
    writer = _Writer(inputs, taken)
    properties = inputs.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = [key for key in inputs.get("required") or () if key in properties]
    if all(_identifier(key) for key in properties):
        params = [f"{key}: {writer.annotation(properties[key], f'{base}_{key}')}" for key in required]
        params += [
            f"{key}: {_union([writer.annotation(value, f'{base}_{key}'), 'None'])} = None"
            for key, value in properties.items() if key not in required
        ]
        signature = f"*, {', '.join(params)}" if params else ""
    else:
        signature = "**arguments: Any"
    output = definition.get("outputSchema")
    structured, unwrap = isinstance(output, Mapping), False
    if isinstance(output, Mapping):
        out_writer = _Writer(output, taken)
        inner = output.get("properties", {}).get("result") if isinstance(output.get("properties"), Mapping) else None
        if any(output.get(key) is True for key in WRAP_KEYS) and inner is not None:
            unwrap = True
            result = out_writer.annotation(inner, f"{base}Result")
        else:
            result = out_writer.annotation(output, f"{base}Result")
        classes = writer.classes + out_writer.classes
    else:
        result, classes = "str", writer.classes
    lines = [f"async def {function}({signature}) -> {result}:"]
    description = definition.get("description") or definition.get("title")
    doc = description.strip() if isinstance(description, str) else ""
    defaults = {
        key: value["default"] for key, value in properties.items()
        if isinstance(value, Mapping) and "default" in value and key not in required
    }
    if defaults:
        doc += ("\n\n" if doc else "") + "Defaults: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in defaults.items())
    lines.append(f"    {_docstring(doc or f'The tool {name}.')}")
    lines.append("    ...")
    return ToolStub(name, function, structured, "\n".join(lines), unwrap), classes


HEADER = "from typing import Any, Literal\n"


def write_stubs(definitions: Mapping[str, Mapping[str, Any]]) -> tuple[str, dict[str, ToolStub]]:
    """The ``tools`` module's stubs for ``definitions`` (exported name -> definition) and
    each tool's :class:`ToolStub`, by function name."""
    names = function_names(definitions)
    taken: set[str] = set()  # class names (CamelCase: never a function's snake_case name)
    parts = [HEADER]
    stubs: dict[str, ToolStub] = {}
    for name in sorted(definitions, key=lambda n: names[n]):
        stub, classes = tool_stub(name, names[name], definitions[name], taken)
        parts.extend(classes)
        parts.append(stub.text)
        stubs[stub.function] = stub
    return "\n\n".join(parts) + "\n", stubs


__all__ = ["ToolStub", "function_names", "python_name", "tool_stub", "write_stubs"]
