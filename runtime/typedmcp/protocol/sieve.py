"""The wire sieve: keep from a newer revision's data only what an older peer's revision defines.

A server writes its handlers once, against one revision's generated models, and serves peers
of older revisions; a client does the same for the results it returns. :func:`sieve` takes
wire data (``model_dump(by_alias=True)`` shape) made with the *source* revision's models and
returns wire data the *target* revision's model accepts:

* A member is dropped from an object when the same-named class of the source revision
  defines it as a field and the target class does not (``structuredContent``, ``title``,
  ``icons``, ``outputSchema``, ``Tool.annotations`` for 2024-11-05, ``resultType``, ...).
  Members neither revision defines (third-party extras, which JSON Schema objects allow)
  pass untouched, and so do free-form objects (``_meta``, ``structuredContent``,
  ``inputSchema.properties``, ``experimental``): only fields typed by a model are entered.
* An item of a list of a discriminated union whose tag the target does not know (a
  ``resource_link`` or ``audio`` block for 2024-11-05) is dropped and reported in
  :attr:`Sieved.dropped`. A value the target cannot hold where it is not a list item (an
  unknown tag, or a list where the target takes one object) removes the optional field
  that holds it, or makes its parent unrepresentable in turn; when the whole result is,
  :class:`SieveError` is raised.
* Nested models are found through the target's annotations (``X | None``, ``list[X]``,
  ``dict[str, X]``, unions, ``Annotated``, type aliases); the source class of a nested target
  class is the same-named class of the source package, else the one the parallel source
  field holds (by tag, or the only one).

With ``source=None`` there is no newer revision to compare with and the sieve is strict:
only members the target defines are kept (free-form objects are still not entered).

The input is never mutated; the output shares unchanged parts with it (the same object comes
back when nothing had to change, e.g. when both revisions are the same). The work per class
is planned once per (target, source) and cached, so a call only visits fields that can hold
something to remove.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from threading import Lock
from types import ModuleType
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from typing_extensions import TypeAliasType

__all__ = ["Dropped", "SieveError", "Sieved", "sieve"]


@dataclass(frozen=True)
class Dropped:
    """A value the sieve removed because the target cannot hold it: where, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Sieved:
    """The sieved wire data and what was dropped beyond undefined members."""

    value: Any
    dropped: tuple[Dropped, ...] = ()


class SieveError(ValueError):
    """The data cannot be represented in the target revision at all."""

    def __init__(self, dropped: Dropped) -> None:
        super().__init__(f"{dropped.path or '/'}: {dropped.reason}")
        self.dropped = dropped


def sieve(data: Any, target: type[BaseModel], source: ModuleType | None) -> Sieved:
    """Sieve wire ``data`` made with the ``source`` revision's models for ``target``.

    ``source`` is the generated ``models`` package of the revision the data was made with
    (``mcp_generated.v2025_11_25.models``), or None for the strict mode (keep only what the
    target defines). Raises :class:`SieveError` when ``data`` cannot be made acceptable.
    """
    node = _root_node(target, source)
    if node is None:
        return Sieved(data)
    drops: list[_Drop] = []
    value = node.apply(data, drops)
    dropped = tuple(Dropped(drop.path(), drop.reason) for drop in drops)
    if value is _DROP:
        raise SieveError(dropped[-1])
    return Sieved(value, dropped)


# The plan: one node per annotation that can hold something to remove; None elsewhere.


class _DropType:
    def __repr__(self) -> str:
        return "<dropped>"


_DROP: Any = _DropType()
_MISSING: Any = object()


class _Drop:
    """A drop record; parents prepend their key on the way back up (only when one happens)."""

    __slots__ = ("keys", "reason")

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.keys: list[str] = []

    def path(self) -> str:
        """A JSON Pointer (RFC 6901) into the input."""
        escaped = (key.replace("~", "~0").replace("/", "~1") for key in reversed(self.keys))
        return "".join(f"/{key}" for key in escaped)


def _note(drops: list[_Drop], since: int, key: object) -> None:
    for drop in drops[since:]:
        drop.keys.append(str(key))


class _Node:
    __slots__ = ()

    def apply(self, value: Any, drops: list[_Drop]) -> Any:
        raise NotImplementedError


class _Model(_Node):
    """An object typed by a target class: drop undefined members, walk model-typed fields."""

    __slots__ = ("drop", "fields", "keep", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.drop: frozenset[str] = frozenset()
        self.keep: frozenset[str] | None = None  # strict mode: the only members kept
        self.fields: tuple[tuple[str, _Node, bool], ...] = ()

    def trivial(self) -> bool:
        return not self.drop and self.keep is None and not self.fields

    def apply(self, value: Any, drops: list[_Drop]) -> Any:
        if not isinstance(value, dict):
            if isinstance(value, list):
                drops.append(_Drop(f"a list where {self.name} takes one object"))
                return _DROP
            return value
        out = value
        if self.keep is not None:
            if not self.keep.issuperset(value):
                out = {k: v for k, v in value.items() if k in self.keep}
        elif self.drop and not self.drop.isdisjoint(value):
            out = {k: v for k, v in value.items() if k not in self.drop}
        for key, node, required in self.fields:
            item = out.get(key, _MISSING)
            if item is _MISSING:
                continue
            since = len(drops)
            new = node.apply(item, drops)
            if new is item:
                continue
            if len(drops) > since:
                _note(drops, since, key)
            if out is value:
                out = dict(value)
            if new is _DROP:
                if required:
                    return _DROP
                del out[key]
            else:
                out[key] = new
        return out


class _List(_Node):
    __slots__ = ("item",)

    def __init__(self, item: _Node) -> None:
        self.item = item

    def apply(self, value: Any, drops: list[_Drop]) -> Any:
        if not isinstance(value, list):
            return value
        out: list[Any] | None = None
        apply = self.item.apply
        for index, item in enumerate(value):
            since = len(drops)
            new = apply(item, drops)
            if new is item:
                if out is not None:
                    out.append(item)
                continue
            if len(drops) > since:
                _note(drops, since, index)
            if out is None:
                out = value[:index]
            if new is not _DROP:
                out.append(new)
        return value if out is None else out


class _Map(_Node):
    """``dict[str, X]`` with a model-bearing ``X``: each value is sieved, none is dropped."""

    __slots__ = ("value",)

    def __init__(self, value: _Node) -> None:
        self.value = value

    def apply(self, value: Any, drops: list[_Drop]) -> Any:
        if not isinstance(value, dict):
            return value
        out = value
        for key, item in value.items():
            since = len(drops)
            new = self.value.apply(item, drops)
            if new is item:
                continue
            if len(drops) > since:
                _note(drops, since, key)
            if out is value:
                out = dict(value)
            if new is _DROP:
                del out[key]
            else:
                out[key] = new
        return out


class _Union(_Node):
    """A union: pick the member by tag (discriminated), by required members, or by shape."""

    __slots__ = ("by_tag", "list_node", "map_node", "models", "open_dict", "open_list", "tag")

    def __init__(self) -> None:
        self.tag: str | None = None
        self.by_tag: dict[str, _Node | None] = {}
        self.models: list[tuple[frozenset[str], _Node | None]] = []
        self.list_node: _Node | None = None
        self.map_node: _Node | None = None
        self.open_dict = False  # a member takes any object (Any, a free-form map)
        self.open_list = False  # a member takes any list

    def apply(self, value: Any, drops: list[_Drop]) -> Any:
        if isinstance(value, dict):
            if self.tag is not None:
                tag = value.get(self.tag)
                if isinstance(tag, str):
                    if tag not in self.by_tag:
                        if self.open_dict:  # another member may take it
                            return value
                        drops.append(_Drop(f"{self.tag} {tag!r} is not defined by the target"))
                        return _DROP
                    node = self.by_tag[tag]
                    return value if node is None else node.apply(value, drops)
                return value
            for required, model_node in self.models:
                if required.issubset(value):
                    return value if model_node is None else model_node.apply(value, drops)
            if self.map_node is not None:
                return self.map_node.apply(value, drops)
            return value  # invalid for the target either way: validation will say so
        if isinstance(value, list):
            if self.list_node is not None:
                return self.list_node.apply(value, drops)
            if self.open_list or not (self.models or self.by_tag):
                return value
            drops.append(_Drop("a list where the target takes one object"))
            return _DROP
        return value


# Building plans.

_ROOTS: dict[tuple[type[BaseModel], ModuleType | None], _Node | None] = {}
_MODELS: dict[tuple[type[BaseModel], type[BaseModel] | None, ModuleType | None], _Model] = {}
_LOCK = Lock()


def _root_node(target: type[BaseModel], source: ModuleType | None) -> _Node | None:
    key = (target, source)
    try:
        return _ROOTS[key]
    except KeyError:
        pass
    with _LOCK:
        if key not in _ROOTS:
            builder = _Builder(source, widening=_revision(source) < _revision(target))
            node = builder.model(target, builder.source_class(target, ()))
            _ROOTS[key] = None if node.trivial() else node
        return _ROOTS[key]


class _Builder:
    def __init__(self, source: ModuleType | None, *, widening: bool = False) -> None:
        self.source = source
        self.strict = source is None
        # Data made with an OLDER revision than the target's (a 2025-11-25 handler serving a
        # 2026-07-28 request): a member the newer target no longer types is one of its open
        # members (``properties`` of ``Tool.inputSchema``, now one JSON Schema keyword
        # among others), not a newer addition to strip; unions are still sieved.
        self.widening = widening and source is not None
        self.building: set[int] = set()

    def source_class(
        self, target: type[BaseModel], candidates: Iterable[type[BaseModel]]
    ) -> type[BaseModel] | None:
        """The same-named class of the source package, else the parallel candidate."""
        if self.source is None:
            return None
        named = getattr(self.source, target.__name__, None)
        if _is_model(named):
            return typing.cast(type[BaseModel], named)
        found = list(candidates)
        tag = _tag_values(target, "type")
        if tag:
            found = [c for c in found if _tag_values(c, "type") & tag] or found
        return found[0] if len(found) == 1 else None

    def model(self, target: type[BaseModel], source: type[BaseModel] | None) -> _Model:
        key = (target, source, self.source)
        plan = _MODELS.get(key)
        if plan is not None:
            return plan
        plan = _Model(target.__name__)
        _MODELS[key] = plan
        self.building.add(id(plan))
        targets = _wire_fields(target)
        sources = _wire_fields(source) if source is not None else {}
        if self.strict:
            plan.keep = frozenset(targets)
        elif not self.widening:
            plan.drop = frozenset(set(sources) - set(targets))
        fields = []
        for wire, info in targets.items():
            parallel = sources.get(wire)
            node = self.annotation(
                info.annotation,
                info.discriminator,
                _models_in(parallel.annotation) if parallel is not None else (),
            )
            if node is not None:
                fields.append((wire, node, info.is_required()))
        plan.fields = tuple(fields)
        self.building.discard(id(plan))
        return plan

    def annotation(
        self, annotation: Any, discriminator: Any, parallel: tuple[type[BaseModel], ...]
    ) -> _Node | None:
        """The node of a type, or None when it can hold nothing the sieve would remove."""
        annotation, discriminator = _unwrap(annotation, discriminator)
        origin = typing.get_origin(annotation)
        if _is_model(annotation) and isinstance(discriminator, str):
            return self.union((annotation,), discriminator, parallel)  # a tagged one-member union
        if _is_model(annotation):
            target = typing.cast(type[BaseModel], annotation)
            plan = self.model(target, self.source_class(target, parallel))
            return None if plan.trivial() and id(plan) not in self.building else plan
        if origin is list:
            (item,) = typing.get_args(annotation) or (Any,)
            node = self.annotation(item, None, parallel)
            return None if node is None else _List(node)
        if origin is dict:
            args = typing.get_args(annotation)
            node = self.annotation(args[1], None, parallel) if len(args) == 2 else None
            return None if node is None else _Map(node)
        if origin is Union or origin is types.UnionType:
            return self.union(typing.get_args(annotation), discriminator, parallel)
        return None

    def union(
        self, members: tuple[Any, ...], discriminator: Any, parallel: tuple[type[BaseModel], ...]
    ) -> _Node | None:
        flat, discriminator = _flatten(members, discriminator)
        node = _Union()
        models = [typing.cast(type[BaseModel], m) for m in flat if _is_model(m)]
        children = [self.annotation(model, None, parallel) for model in models]
        tags = [_tag_values(m, discriminator) for m in models] if discriminator else []
        if models and tags and all(tags):
            node.tag = _wire_tag(models[0], discriminator)
            for values, child in zip(tags, children, strict=True):
                node.by_tag.update(dict.fromkeys(values, child))
        else:
            node.models = [
                (_required_wire(model), child)
                for model, child in zip(models, children, strict=True)
            ]
        needed = node.tag is not None or any(child is not None for child in children)
        for member in flat:
            origin = typing.get_origin(member)
            if _is_model(member) or member is type(None) or _is_scalar(member):
                continue
            if origin is list:
                child = self.annotation(member, None, parallel)
                if child is None:
                    node.open_list = True
                elif node.list_node is None:
                    node.list_node = child
                    needed = True
            elif origin is dict:
                child = self.annotation(member, None, parallel)
                if child is None:
                    node.open_dict = True
                elif node.map_node is None:
                    node.map_node = child
                    needed = True
            else:  # Any, a forward reference, anything the sieve cannot see into
                node.open_dict = node.open_list = True
        if not needed:
            return None
        plain = node.tag is None and node.list_node is None and node.map_node is None
        if plain and len(node.models) == 1 and not (node.open_dict or node.open_list):
            return node.models[0][1]  # ``X | None``: the model's own node does the same
        return node


# typing_extensions' class, and typing's own from Python 3.12 (``type X = ...``).
_ALIAS_TYPES: tuple[type, ...] = (TypeAliasType, getattr(typing, "TypeAliasType", TypeAliasType))


def _unwrap(annotation: Any, discriminator: Any) -> tuple[Any, Any]:
    """Strip type aliases and ``Annotated``, keeping a ``Field(discriminator=...)`` found."""
    for _ in range(32):
        if isinstance(annotation, _ALIAS_TYPES):
            annotation = typing.cast(Any, annotation).__value__
        elif typing.get_origin(annotation) is typing.Annotated:
            for extra in annotation.__metadata__:
                if isinstance(extra, FieldInfo) and isinstance(extra.discriminator, str):
                    discriminator = extra.discriminator
            annotation = annotation.__origin__
        else:
            break
    return annotation, discriminator


def _flatten(members: tuple[Any, ...], discriminator: Any) -> tuple[list[Any], str | None]:
    """The members of nested unions in one list, and the string discriminator found."""
    flat: list[Any] = []
    tag = discriminator if isinstance(discriminator, str) else None
    for raw in members:
        member, inner = _unwrap(raw, None)
        if typing.get_origin(member) in (Union, types.UnionType):
            nested, inner_tag = _flatten(typing.get_args(member), inner)
            flat.extend(nested)
            tag = tag or inner_tag
        else:
            flat.append(member)
    return flat, tag


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _is_scalar(value: Any) -> bool:
    """``str``, ``int``, ``float``, ``bool`` or a ``Literal``: nothing to sieve, no object."""
    return value in (str, int, float, bool) or typing.get_origin(value) is Literal


def _is_literal(value: Any) -> bool:
    return typing.get_origin(value) is Literal


def _revision(where: ModuleType | type[BaseModel] | None) -> str:
    """The protocol revision of a generated models package or class ('' if unknown)."""
    if where is None:
        return ""
    name = where.__name__ if isinstance(where, ModuleType) else where.__module__
    while name:
        version = getattr(sys.modules.get(name), "PROTOCOL_VERSION", None)
        if isinstance(version, str):
            return version
        name = name.rpartition(".")[0]
    return ""


def _wire_fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    return {info.alias or name: info for name, info in model.model_fields.items()}


def _required_wire(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(key for key, info in _wire_fields(model).items() if info.is_required())


def _tag_values(model: type[BaseModel], tag: str) -> frozenset[str]:
    """The const values a model's tag field (by Python or wire name) takes."""
    for name, info in model.model_fields.items():
        if tag in (name, info.alias):
            annotation, _ = _unwrap(info.annotation, None)
            if _is_literal(annotation):
                return frozenset(v for v in typing.get_args(annotation) if isinstance(v, str))
    return frozenset()


def _wire_tag(model: type[BaseModel], tag: str) -> str:
    """The wire name of the discriminator (pydantic's names the Python field)."""
    info = model.model_fields.get(tag)
    return (info.alias or tag) if info is not None else tag


def _models_in(annotation: Any, depth: int = 0) -> tuple[type[BaseModel], ...]:
    """Every model class an annotation can hold, outermost first."""
    annotation, _ = _unwrap(annotation, None)
    if _is_model(annotation):
        return (annotation,)
    if depth > 8:
        return ()
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        for model in _models_in(arg, depth + 1):
            if model not in found:
                found.append(model)
    return tuple(found)
