"""Search mode: the host's catalog behind three tools instead of hundreds.

A host serving many servers hands a model every tool definition before the user has said
anything. With ``expose="search"`` (``"host": {"expose": "search"}``, ``mcp-host serve
--expose search``) the gateway serves exactly three tools:

* ``search_tools(query, limit=10)``: ranked matches (exported name, server, title, one
  line of description);
* ``describe_tools(names)``: the full definitions (input and output schemas, annotations);
* ``call_tool(name, arguments)``: routed exactly as a direct ``tools/call`` of that tool
  (validation, time limits, progress, cancellation, sampling/elicitation forwarding,
  errors).

Applications running their own model loop use :meth:`Host.discovery
<typedmcp.host.Host.discovery>`: ``host.discovery().search("weather in a city")`` ->
``list[ToolMatch]``.

Ranking is Okapi BM25 over each tool's exported and original name, title, description and
argument names, written here (:class:`SearchIndex`): for the few hundred tools of a host it
builds and answers faster than ``bm25s`` with the same top results, and needs no numpy
(the figures are in ``docs/how-to/large-catalogs.md``). The index follows the registry:
the host swaps in a new registry when a server's lists change (``list_changed``, a
restart, a reload) and the next search indexes that one. What is searchable is what the
registry exports (``allowTools``/``denyTools``), of servers connected now, and, with an
access policy and an authenticated caller, only the tools that caller may call.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, RpcError
from ..protocol.access import AccessPolicy
from ..protocol.origin import request_origin
from ..protocol.results import to_wire
from ..protocol.server import tool_error
from ..protocol.stubs import ToolError
from .config import EXPOSE_MODES, check_expose
from .errors import HostError, UnknownTool
from .registry import Registry, ToolEntry, function_definitions

SEARCH_TOOLS, DESCRIBE_TOOLS, CALL_TOOL = "search_tools", "describe_tools", "call_tool"
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
#: the most names one describe_tools call may ask for
MAX_DESCRIBE = 50

#: how often each field's words count in a tool's document (a name says more than prose)
FIELD_WEIGHTS = (("name", 3), ("title", 2), ("description", 1), ("arguments", 1))
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
#: words too common to tell tools apart (left out of documents and queries)
STOP_WORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "its", "of", "on", "or", "the", "this", "to", "with", "my", "me", "i"]
)


def words(text: str) -> list[str]:
    """The search terms of ``text``: camelCase, snake_case and ``server__tool`` split,
    lower case, a plural's ``s`` dropped (``notes`` finds ``add_note``), without
    :data:`STOP_WORDS`."""
    terms = []
    for word in _WORD.findall(_CAMEL.sub(" ", text).lower()):
        if word in STOP_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        terms.append(word)
    return terms


def _fields(entry: ToolEntry) -> dict[str, str]:
    definition = entry.definition
    schema = definition.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    title = definition.get("title")
    if not isinstance(title, str):
        annotations = definition.get("annotations")
        title = annotations.get("title") if isinstance(annotations, Mapping) else None
    description = definition.get("description")
    return {
        "name": f"{entry.name} {entry.tool}",
        "title": title if isinstance(title, str) else "",
        "description": description if isinstance(description, str) else "",
        "arguments": " ".join(str(key) for key in properties) if isinstance(properties, Mapping) else "",
    }


@dataclass(frozen=True)
class ToolMatch:
    """One search result: the tool's exported ``name`` (what ``call_tool`` takes), its
    ``server``, ``title`` and the first line of its ``description``, and the BM25 ``score``."""

    name: str
    server: str
    title: str | None
    description: str
    score: float

    def wire(self) -> dict[str, Any]:
        """As ``search_tools`` answers it (no score: the order says it)."""
        out: dict[str, Any] = {"name": self.name, "server": self.server}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        return out


class SearchIndex:
    """Okapi BM25 (k1 = 1.5, b = 0.75) over the tools of one registry."""

    k1 = 1.5
    b = 0.75

    def __init__(self, entries: Iterable[ToolEntry]) -> None:
        self.entries: list[ToolEntry] = list(entries)
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.lengths: list[int] = []
        for number, entry in enumerate(self.entries):
            fields = _fields(entry)
            counts: dict[str, int] = {}
            for field, weight in FIELD_WEIGHTS:
                for term in words(fields[field]):
                    counts[term] = counts.get(term, 0) + weight
            self.lengths.append(sum(counts.values()))
            for term, count in counts.items():
                self.postings.setdefault(term, []).append((number, count))
        total = len(self.entries)
        self.average = (sum(self.lengths) / total) if total else 1.0
        self.idf = {
            term: math.log(1 + (total - len(found) + 0.5) / (len(found) + 0.5))
            for term, found in self.postings.items()
        }
        #: each tool's length normalisation, k1 * (1 - b + b * length / average length)
        self.norms = [self.k1 * (1 - self.b + self.b * length / self.average) for length in self.lengths]

    def rank(self, query: str, keep: Callable[[ToolEntry], bool] | None = None) -> list[tuple[ToolEntry, float]]:
        """Every tool matching a word of ``query`` that ``keep`` keeps, best first (ties
        by name)."""
        scores: dict[int, float] = {}
        boost, norms = self.k1 + 1, self.norms
        for term in dict.fromkeys(words(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for number, count in self.postings[term]:
                scores[number] = scores.get(number, 0.0) + idf * count * boost / (count + norms[number])
        ranked = [(self.entries[n], score) for n, score in scores.items()]
        if keep is not None:
            ranked = [(entry, score) for entry, score in ranked if keep(entry)]
        ranked.sort(key=lambda item: (-item[1], item[0].name))
        return ranked


def _one_line(entry: ToolEntry) -> str:
    description = entry.definition.get("description")
    if not isinstance(description, str) or not description.strip():
        return ""
    return description.strip().splitlines()[0].strip()


class Discovery:
    """Search and describe the host's tools (``host.discovery()``).

    ``policy`` and ``principal``: with both, only the tools ``principal`` may call under
    ``policy`` (an :class:`~typedmcp.protocol.access.AccessPolicy` keyed by exported names)
    are found or described.
    """

    def __init__(self, host: Any, *, policy: AccessPolicy | None = None, principal: Any = None) -> None:
        self.host = host
        self.policy = policy
        self.principal = principal

    def _index(self) -> SearchIndex:
        """The index of the host's current registry (built on first use after a change)."""
        registry = self.host.registry
        cached: tuple[Registry, SearchIndex] | None = getattr(self.host, "_search_index", None)
        if cached is None or cached[0] is not registry:
            cached = (registry, SearchIndex(registry.tools.values()))
            self.host._search_index = cached
        return cached[1]

    def usable(self, name: str) -> bool:
        """Whether ``name`` is a tool of the registry whose server is connected and that the
        principal may call."""
        if not self.host.available(name):
            return False
        if self.policy is None or self.principal is None:
            return True
        return self.policy.refusal("tools/call", {"name": name}, self.principal) is None

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[ToolMatch]:
        """The ``limit`` tools best matching ``query`` (1 to 50)."""
        query = _query(query)
        limit = _limit(limit)
        ranked = self._index().rank(query, lambda entry: self.usable(entry.name))
        return [
            ToolMatch(entry.name, entry.server, _title(entry), _one_line(entry), round(score, 4))
            for entry, score in ranked[:limit]
        ]

    def describe(self, names: Sequence[str]) -> list[dict[str, Any]]:
        """The full definitions of the tools ``names`` (exported names), in that order."""
        if isinstance(names, str) or not isinstance(names, Sequence) or not all(isinstance(n, str) for n in names):
            raise ValueError('names must be a list of tool names, e.g. ["notes__add_note"]')
        if not names or len(names) > MAX_DESCRIBE:
            raise ValueError(f"names must list 1 to {MAX_DESCRIBE} tool names (found by search_tools)")
        unknown = [name for name in names if not self.usable(name)]
        if unknown:
            raise UnknownTool("tool", unknown[0], len(self.host.registry.tools))
        tools = self.host.registry.tools
        return [tools[name].exported() for name in dict.fromkeys(names)]


    def answer(self, name: str, arguments: Any) -> dict[str, Any] | tuple[str, dict[str, Any]]:
        """A model's call of one of the three tools: the result of ``search_tools`` or
        ``describe_tools`` (wire form), or, for ``call_tool``, the tool and arguments to
        route. A mistake raises :class:`~typedmcp.protocol.stubs.ToolError` (for the model to
        read); a tool the principal may not call, or a name that is none of the three,
        :class:`~typedmcp.engine.jsonrpc.RpcError`."""
        if name == SEARCH_TOOLS:
            _only(arguments, ("query", "limit"), SEARCH_TOOLS)
            try:
                matches = self.search(arguments.get("query"), arguments.get("limit", DEFAULT_LIMIT))
            except ValueError as error:
                raise ToolError(f"search_tools: {error}") from None
            return _structured({"tools": [match.wire() for match in matches]})
        if name == DESCRIBE_TOOLS:
            _only(arguments, ("names",), DESCRIBE_TOOLS)
            try:
                tools = self.describe(arguments.get("names"))
            except UnknownTool as error:
                raise ToolError(f"describe_tools: no tool named {error.name!r}; find tools with search_tools") from None
            except ValueError as error:
                raise ToolError(f"describe_tools: {error}") from None
            return _structured({"tools": tools})
        if name == CALL_TOOL:
            _only(arguments, ("name", "arguments"), CALL_TOOL)
            tool, inner = arguments.get("name"), arguments.get("arguments", {})
            if not isinstance(tool, str) or not isinstance(inner, dict):
                raise ToolError('call_tool takes {"name": "<a name from search_tools>", "arguments": {...}}')
            if tool not in self.host.registry.tools:
                raise ToolError(f"call_tool: no tool named {tool!r}; find tools with search_tools")
            if self.policy is not None and self.principal is not None:
                refusal = self.policy.refusal("tools/call", {"name": tool}, self.principal)
                if refusal is not None:
                    raise RpcError(INVALID_REQUEST, refusal.message, refusal.data)
            return tool, inner
        raise RpcError(
            INVALID_PARAMS,
            f"Unknown tool: {name!r} (this gateway serves {SEARCH_TOOLS}, {DESCRIBE_TOOLS} and "
            f"{CALL_TOOL}: run a tool with call_tool)",
        )

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        """Run a model's call of one of the three tools (an application's own tool loop):
        its result in wire form (``content``, ``structuredContent``, ``isError``); a mistake,
        a refusal or a failed call is an error result the model can read. ``options`` go to
        :meth:`Host.call_tool <typedmcp.host.Host.call_tool>` (``timeout``, ``progress``)."""
        try:
            answer = self.answer(name, {} if arguments is None else arguments)
            if isinstance(answer, dict):
                return answer
            wire = to_wire(await self.host.call_tool(answer[0], answer[1], **options))
        except (ToolError, RpcError, HostError) as error:
            return tool_error(error.message if isinstance(error, RpcError) else str(error))
        return wire if isinstance(wire, dict) else {"content": []}

    def function_definitions(self, style: str = "openai") -> list[dict[str, Any]]:
        """The three tools as function-calling definitions (``openai``, ``anthropic``,
        ``gemini``: see :func:`~.registry.function_definitions`), to give a model in place of
        ``host.function_definitions()``; answer its calls with :meth:`call`."""
        entries = [ToolEntry(str(d["name"]), "", str(d["name"]), d) for d in SEARCH_DEFINITIONS]
        return function_definitions(entries, style)


def _title(entry: ToolEntry) -> str | None:
    title = _fields(entry)["title"]
    return title or None


def _query(query: Any) -> str:
    if not isinstance(query, str) or not words(query):
        raise ValueError('query must be a few words saying what the tool should do, e.g. "add a note"')
    return query


def _limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}")
    return limit


# -- the three tools, as the gateway serves them ------------------------------------------------

_MATCH = {
    "type": "object",
    "properties": {
        "name": {"type": "string"}, "server": {"type": "string"},
        "title": {"type": "string"}, "description": {"type": "string"},
    },
    "required": ["name", "server", "description"],
}
SEARCH_DEFINITIONS: list[dict[str, Any]] = [
    {
        "name": SEARCH_TOOLS,
        "title": "Search the tools",
        "description": (
            "Find tools by what they do. Answers the best matches (name, server, title, one line "
            "of description); read their parameters with describe_tools, then run one with call_tool."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "a few words saying what the tool should do"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            },
            "required": ["query"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"tools": {"type": "array", "items": _MATCH}},
            "required": ["tools"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": DESCRIBE_TOOLS,
        "title": "Describe tools",
        "description": (
            "The full definitions (input and output schemas, annotations) of tools named by "
            "search_tools."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_DESCRIBE},
            },
            "required": ["names"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
            "required": ["tools"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": CALL_TOOL,
        "title": "Call a tool",
        "description": (
            "Run a tool found by search_tools with its arguments (an object matching the "
            "inputSchema describe_tools gave); answers the tool's own result."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the tool's name, as search_tools gave it"},
                "arguments": {"type": "object", "description": "the tool's arguments"},
            },
            "required": ["name"],
        },
    },
]

#: ``(self, params, ctx) -> result``: how the gateway serves a direct ``tools/call``
Routed = Callable[[Any, Any, Any], Any]


def _structured(value: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": json.dumps(value)}], "structuredContent": value}


def search_namespace(host: Any, routed: Routed) -> dict[str, Any]:
    """The ``list_tools`` and ``call_tool`` handlers of a gateway in search mode; ``routed``
    is the gateway's own ``call_tool`` handler, through which ``call_tool`` runs a tool (so
    a call is served exactly as a direct one). The handler object's ``access_policy``
    (exported names -> requirements), when it has one, decides per authenticated caller
    which tools are found, described and called."""

    def discovery(handlers: Any) -> Discovery:
        origin = request_origin()
        principal = origin.principal if origin is not None else None
        return Discovery(host, policy=getattr(handlers, "access_policy", None), principal=principal)

    async def list_tools(self: Any, params: Any, ctx: Any) -> dict[str, Any]:
        return {"tools": SEARCH_DEFINITIONS}

    async def call_tool(self: Any, params: Any, ctx: Any) -> Any:
        answer = discovery(self).answer(params.name, params.arguments or {})
        if isinstance(answer, dict):
            return answer
        name, inner = answer
        return await routed(self, params.model_copy(update={"name": name, "arguments": inner}), ctx)

    return {"list_tools": list_tools, "call_tool": call_tool}


def _only(arguments: Any, accepted: tuple[str, ...], tool: str) -> None:
    if not isinstance(arguments, Mapping):
        raise ToolError(f"{tool}: arguments must be an object")
    extra = sorted(set(arguments) - set(accepted))
    if extra:
        raise ToolError(f"{tool}: unknown argument {extra[0]!r} (it takes {', '.join(accepted)})")


__all__ = [
    "CALL_TOOL",
    "DESCRIBE_TOOLS",
    "EXPOSE_MODES",
    "SEARCH_DEFINITIONS",
    "SEARCH_TOOLS",
    "Discovery",
    "SearchIndex",
    "ToolMatch",
    "check_expose",
    "search_namespace",
    "words",
]
