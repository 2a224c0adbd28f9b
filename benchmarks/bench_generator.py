"""Benchmark mcp-codegen and its generated package beside the official SDK's types.

Run from the repository root::

    /tmp/venv/bin/python benchmarks/bench_generator.py [--quick] [--repeats N] [--json PATH]

One run measures, and prints as a table of medians and ratios:

1. generation: wall time of ``mcp-codegen --all --out <tmp>`` (a subprocess, every released
   revision), plus the in-process time of ``load_schema`` + ``generate_package`` per revision;
2. cold import: ``import mcp_generated.v2025_11_25.models`` + ``.dispatch`` versus
   ``import mcp_types`` (the types package of the official SDK ``mcp==2.3.0``), each in a fresh
   interpreter, both including pydantic ("total") and with ``pydantic``, ``pydantic.BaseModel``
   and ``typing_extensions`` imported before the timer starts ("net");
3. parse + validate throughput, in this one process: (a) a ``tools/call`` request, raw bytes of
   the whole JSON-RPC message to a typed object; (b) a ``tools/list`` response carrying 20 tools
   with realistic input schemas, raw bytes to a typed ``ListToolsResult``. The SDK side
   reproduces, with the SDK's own functions and types, what ``mcp`` 2.3.0 does per incoming
   message (see ``sdk_paths`` for the file:line references).

The SDK is only needed for the comparison (``pip install mcp==2.3.0``, the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy (explicit_package_bases) knows this file as benchmarks.bench_generator
    from benchmarks import _common as common
else:  # run as a script, benchmarks/ is sys.path[0]
    import _common as common

REPO_ROOT = Path(__file__).resolve().parent.parent
REVISION = "2025-11-25"
PACKAGE = "mcp_generated.v2025_11_25"
SDK_REQUIREMENT = "mcp==2.3.0"
RELEASED = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

# Targets: ours / SDK for import time, ours / SDK for throughput, seconds for generation.
TARGET_GENERATE_ALL_S = 10.0
TARGET_IMPORT_RATIO = 0.25
TARGET_CALL_SPEEDUP = 3.0
TARGET_LIST_SPEEDUP = 5.0


@dataclass(frozen=True)
class Settings:
    """How many samples each measurement takes."""

    generate_runs: int
    import_runs: int
    repeats: int
    call_batch: int
    list_batch: int
    warmup_fraction: float = 0.2

    @classmethod
    def make(cls, *, quick: bool, repeats: int | None) -> Settings:
        if quick:
            base = cls(generate_runs=1, import_runs=7, repeats=3, call_batch=1500, list_batch=300)
        else:
            base = cls(generate_runs=3, import_runs=9, repeats=7, call_batch=5000, list_batch=2000)
        if repeats is None:
            return base
        n = max(1, repeats)
        return replace(base, generate_runs=n, import_runs=max(7, n), repeats=n)


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


# --------------------------------------------------------------------------------------
# 1. Generation time
# --------------------------------------------------------------------------------------


def schema_dir_from(option: str | None) -> Path:
    """``--schema-dir``, else ``$MCP_CODEGEN_SCHEMA_DIR``, else the repository's ``schema/``."""
    configured = option or os.environ.get("MCP_CODEGEN_SCHEMA_DIR")
    path = Path(configured) if configured else REPO_ROOT / "schema"
    if not all((path / revision / "schema.json").is_file() for revision in RELEASED):
        sys.exit(
            f"official schemas not found under {path}; pass --schema-dir or set MCP_CODEGEN_SCHEMA_DIR"
        )
    return path


def codegen_command() -> list[str]:
    """The ``mcp-codegen`` console script of this interpreter's environment."""
    beside = Path(sys.executable).with_name("mcp-codegen")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("mcp-codegen")
    if found:
        return [found]
    return [sys.executable, "-c", "from typedmcp_codegen.cli import main; main()"]


def tree_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def bench_generate_cli(schema_dir: Path, runs: int) -> dict[str, Any]:
    """Wall time of ``mcp-codegen --all --out <fresh tmpdir>``; output compared to generated/."""
    env = {**os.environ, "MCP_CODEGEN_SCHEMA_DIR": str(schema_dir)}
    command = codegen_command()
    samples: list[float] = []
    matches_committed: bool | None = None
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="mcp-codegen-bench-") as tmp:
            out = Path(tmp) / "mcp_generated"
            start = time.perf_counter()
            proc = subprocess.run(
                [*command, "--all", "--offline", "--out", str(out)],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            samples.append(time.perf_counter() - start)
            if proc.returncode != 0:
                sys.exit(f"mcp-codegen failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
            if matches_committed is None:
                committed = REPO_ROOT / "generated" / "mcp_generated"
                matches_committed = tree_files(out) == tree_files(committed)
    return {
        "command": " ".join([*command, "--all", "--offline", "--out", "<tmpdir>"]),
        "samples_s": samples,
        "median_s": median(samples),
        "output_matches_committed": matches_committed,
    }


_INPROCESS_GENERATE = r"""
import json, sys, time
from pathlib import Path
from typedmcp_codegen.generate import generate_package
from typedmcp_codegen.load import SchemaSource, load_schema
from typedmcp_codegen.pins import load_pins

schema_dir, runs, revisions = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
pins = load_pins()
source = SchemaSource(schema_dir=schema_dir, cache_dir=None, allow_download=False)

def once(revision):
    start = time.perf_counter()
    generate_package(load_schema(revision, pins, source), pins.find(revision))
    return time.perf_counter() - start

first = once(revisions[0])  # warm-up: lazy imports and caches of the generator's dependencies
samples = {revision: [] for revision in revisions}
for _ in range(runs):
    for revision in revisions:
        samples[revision].append(once(revision))
print(json.dumps({"first_call_s": first, "samples_s": samples}))
"""


def bench_generate_inprocess(schema_dir: Path, runs: int) -> dict[str, Any]:
    """``load_schema`` + ``generate_package`` per revision, warm, in one child interpreter.

    A child keeps the generator's imports (datamodel-code-generator, black, ...) out of the
    process that measures throughput.
    """
    proc = subprocess.run(
        [sys.executable, "-c", _INPROCESS_GENERATE, str(schema_dir), str(runs), ",".join(RELEASED)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"in-process generation failed:\n{proc.stderr}")
    raw: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    samples: dict[str, list[float]] = raw["samples_s"]
    per_revision = {revision: median(values) for revision, values in samples.items()}
    return {
        "first_call_s": raw["first_call_s"],
        "samples_s": samples,
        "median_s": per_revision,
        "sum_of_medians_s": sum(per_revision.values()),
    }


# --------------------------------------------------------------------------------------
# 2. Cold import time
# --------------------------------------------------------------------------------------

# What is imported, untimed, before the timer starts.
PRELOADS: dict[str, str] = {
    # Everything: the interpreter only.
    "total": "",
    # Net of pydantic, as the comparison is defined: pydantic, BaseModel, typing_extensions.
    "net": "import pydantic, typing_extensions\nfrom pydantic import BaseModel\n",
    # Informational: pydantic 2.x imports lazily, so ``BaseModel`` alone leaves pydantic.fields,
    # pydantic.types and annotated_types to whoever first declares a model; this preload takes
    # them out too, leaving only the package's own modules in the timed window.
    "net_full": (
        "import pydantic, typing_extensions\n"
        "from pydantic import BaseModel, ConfigDict, Field, TypeAdapter\n"
        "import pydantic.fields, pydantic.types\n"
    ),
}
_TIMED_IMPORT = (
    "import time\n"
    "{preload}"
    "_t0 = time.perf_counter()\n"
    "{imports}\n"
    "_t1 = time.perf_counter()\n"
    "print(repr(_t1 - _t0))\n"
)
IMPORTS: dict[str, str] = {
    "ours": f"import {PACKAGE}.models\nimport {PACKAGE}.dispatch",
    "sdk": "import mcp_types",
    # Informational: what the SDK's runtime really loads to validate (the surface models).
    "sdk_with_methods": "import mcp_types\nimport mcp_types.methods",
    # Informational: import plus the first tools/call params validation (our models load
    # lazily, so the import alone defers class building to first use; this row counts it).
    "ours_first_call": (
        f"import {PACKAGE}.models\nimport {PACKAGE}.dispatch\n"
        f'{PACKAGE}.dispatch.REQUESTS["tools/call"].validate_params('
        '{"name": "x", "arguments": {}})'
    ),
    "sdk_first_call": (
        "import mcp_types\n"
        'mcp_types.CallToolRequestParams.model_validate({"name": "x", "arguments": {}})'
    ),
}
IMPORT_VARIANTS: tuple[tuple[str, str], ...] = (
    ("ours", "total"),
    ("sdk", "total"),
    ("ours", "net"),
    ("sdk", "net"),
    ("ours", "net_full"),
    ("sdk", "net_full"),
    ("sdk_with_methods", "net"),
    ("ours_first_call", "net"),
    ("sdk_first_call", "net"),
)


def import_once(subject: str, preload: str) -> float:
    code = _TIMED_IMPORT.format(preload=PRELOADS[preload], imports=IMPORTS[subject])
    # -I: isolated (no cwd on sys.path, no PYTHON* variables, no user site).
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"timed import failed:\n{code}\n{proc.stderr}")
    return float(proc.stdout.strip().splitlines()[-1])


def bench_imports(runs: int) -> dict[str, Any]:
    """Median seconds per ``<subject>_<preload>``, each sample a fresh interpreter.

    Variants are interleaved run by run (rotating the order) so that drift in the machine's
    load spreads over all of them.
    """
    variants = list(IMPORT_VARIANTS)
    samples: dict[tuple[str, str], list[float]] = {variant: [] for variant in variants}
    for subject, preload in variants:  # warm-up: writes any missing .pyc files
        import_once(subject, preload)
    for run in range(runs):
        shift = run % len(variants)
        for subject, preload in variants[shift:] + variants[:shift]:
            samples[(subject, preload)].append(import_once(subject, preload))
    result: dict[str, Any] = {"statements": IMPORTS, "preloads": PRELOADS}
    for (subject, preload), values in samples.items():
        result[f"{subject}_{preload}"] = {"samples_s": values, "median_s": median(values)}
    return result


# --------------------------------------------------------------------------------------
# 3. Parse + validate throughput
# --------------------------------------------------------------------------------------

CALL_TOOL_MESSAGE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 42,
    "method": "tools/call",
    "params": {
        "name": "search_issues",
        "arguments": {
            "query": "label:bug state:open sort:updated",
            "limit": 25,
            "labels": ["bug", "p1", "regression"],
            "filters": {"state": "open", "assignee": None, "since": "2025-11-01T00:00:00Z"},
            "include_comments": True,
        },
    },
}

_DOMAINS = ("issues", "files", "calendar", "billing", "deploy")
_VERBS = ("search", "create", "update", "delete")
_STATES = ("open", "closed", "draft", "archived", "pending")


def _input_schema(index: int) -> dict[str, Any]:
    """A realistic tool input schema: nested objects, enums, arrays, descriptions, required."""
    domain = _DOMAINS[index % len(_DOMAINS)]
    properties: dict[str, Any] = {
        "query": {
            "type": "string",
            "description": f"Free-text query over {domain}; supports field:value qualifiers.",
            "minLength": 1,
            "maxLength": 512,
        },
        "limit": {
            "type": "integer",
            "description": "Maximum number of items to return.",
            "minimum": 1,
            "maximum": 100,
            "default": 20,
        },
        "sort": {
            "type": "string",
            "description": "Sort order of the returned items.",
            "enum": ["relevance", "created", "updated", "name"][: 2 + index % 3],
            "default": "relevance",
        },
        "tags": {
            "type": "array",
            "description": "Only items carrying all of these tags.",
            "items": {"type": "string", "pattern": "^[a-z0-9-]+$"},
            "uniqueItems": True,
            "maxItems": 10,
        },
        "filter": {
            "type": "object",
            "description": f"Structured filter on {domain} attributes.",
            "properties": {
                "state": {"type": "string", "enum": list(_STATES[: 2 + index % 4])},
                "since": {"type": "string", "format": "date-time"},
                "owner": {
                    "type": "object",
                    "description": "The owner to match.",
                    "properties": {
                        "login": {"type": "string"},
                        "id": {"type": "integer", "minimum": 0},
                        "kind": {"type": "string", "enum": ["user", "team", "bot"]},
                    },
                    "required": ["login"],
                    "additionalProperties": False,
                },
            },
            "required": ["state"],
            "additionalProperties": False,
        },
        "fields": {
            "type": "array",
            "description": "Projection: which fields of each item to return.",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Dotted path of the field."},
                    "alias": {"type": "string"},
                    "transform": {"type": "string", "enum": ["none", "lower", "upper", "trim"]},
                },
                "required": ["path"],
            },
        },
    }
    for extra in range(index % 4):
        properties[f"option_{extra}"] = {
            "type": ["string", "null"] if extra % 2 else "boolean",
            "description": f"Tool-specific option {extra} of {domain} tool {index}.",
        }
    return {
        "type": "object",
        "properties": properties,
        "required": ["query"] if index % 2 else ["query", "filter"],
    }


def build_tool(index: int) -> dict[str, Any]:
    domain = _DOMAINS[index % len(_DOMAINS)]
    verb = _VERBS[index % len(_VERBS)]
    tool: dict[str, Any] = {
        "name": f"{domain}_{verb}_{index:02d}",
        "title": f"{verb.capitalize()} {domain} ({index})",
        "description": (
            f"{verb.capitalize()} {domain} matching a query and a structured filter. Returns "
            "at most `limit` items, sorted as requested; use `fields` to trim the payload. "
            "Read the `nextCursor` of the result to page through larger sets."
        ),
        "inputSchema": _input_schema(index),
    }
    if index % 2 == 0:
        tool["annotations"] = {
            "title": tool["title"],
            "readOnlyHint": verb == "search",
            "destructiveHint": verb == "delete",
            "idempotentHint": verb != "create",
            "openWorldHint": False,
        }
    if index % 3 == 0:
        tool["outputSchema"] = {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "object"}},
                "total": {"type": "integer", "minimum": 0},
                "nextCursor": {"type": "string"},
            },
            "required": ["items", "total"],
        }
    return tool


def list_tools_response(tool_count: int = 20) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"tools": [build_tool(index) for index in range(tool_count)]},
    }


def encode(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


# ---- ours -----------------------------------------------------------------------------


def check_envelope(message: Any) -> dict[str, Any]:
    """The JSON-RPC envelope checks a runtime does before the dispatch table (no pydantic)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise ValueError("not a JSON-RPC 2.0 message")
    request_id = message.get("id")
    if request_id is not None and (
        isinstance(request_id, bool) or not isinstance(request_id, str | int)
    ):
        raise ValueError("bad id")
    return message


#: The path counted as ours in each throughput row: what the runtime itself does per message.
RUNTIME_CALL = "runtime: Engine._receive_now checks + REQUESTS[method].validate_params"
RUNTIME_LIST = 'runtime: Engine._receive_now checks + REQUESTS["tools/list"].validate_result'


def runtime_paths() -> dict[str, Callable[[bytes], Any]]:
    """What ``typedmcp`` does with an incoming message, step for step (the counted rows).

    ``Engine._receive_now`` (engine/jsonrpc.py) decodes with
    ``from_json(data, allow_inf_nan=False, cache_strings="keys")`` and checks the envelope:
    a dict; for a request a valid id, ``jsonrpc`` "2.0", a string method, dict params (then
    ``Engine._start`` -> ``Session.on_request`` validates them with the method's
    ``RequestSpec.validate_params``); for a response ``result`` or ``error`` beside the id
    (``Engine._receive_response``: ``jsonrpc`` "2.0", one of the two), whose result the
    client validates with the request's ``RequestSpec.validate_result``. The id lookup of
    pending requests and the task start are left out (no I/O here, on either side).
    """
    from pydantic_core import from_json

    from typedmcp.engine.jsonrpc import is_request_id

    from mcp_generated.v2025_11_25 import dispatch

    requests = dispatch.REQUESTS
    list_tools = dispatch.REQUESTS["tools/list"]

    def receive_request(raw: bytes) -> Any:
        message = from_json(raw, allow_inf_nan=False, cache_strings="keys")
        if type(message) is not dict or "method" not in message:
            raise ValueError("not a request")
        method, params = message["method"], message.get("params")
        if (
            not is_request_id(message.get("id"))
            or message.get("jsonrpc") != "2.0"
            or type(method) is not str
            or (params is not None and type(params) is not dict)
        ):
            raise ValueError("a request the read loop answers with an error")
        return requests[method].validate_params(params)

    def receive_list_response(raw: bytes) -> Any:
        message = from_json(raw, allow_inf_nan=False, cache_strings="keys")
        if type(message) is not dict or "method" in message:
            raise ValueError("not a response")
        if not is_request_id(message.get("id")):
            raise ValueError("bad id")
        has_result = "result" in message
        if message.get("jsonrpc") != "2.0" or has_result == ("error" in message):
            raise ValueError("malformed response")
        return list_tools.validate_result(message["result"])

    return {"call": receive_request, "list": receive_list_response}


def ours_paths() -> dict[str, dict[str, Callable[[bytes], Any]]]:
    """Our paths, keyed by what they do; built once, used warm. The runtime's own path
    (:func:`runtime_paths`) is counted; the others are alternatives, shown for information.

    The dispatch-table alternatives decode with the stdlib ``json.loads`` or with
    pydantic-core's ``from_json`` (default string caching, or ``cache_strings="keys"``),
    check the envelope by hand, then validate with the spec of the method.
    """
    from pydantic import TypeAdapter
    from pydantic_core import from_json

    from mcp_generated.v2025_11_25 import dispatch, models

    runtime = runtime_paths()

    client_request: TypeAdapter[Any] = TypeAdapter(models.ClientRequest)
    requests = dispatch.REQUESTS
    list_tools = dispatch.REQUESTS["tools/list"]
    list_tools_result = models.ListToolsResult
    def from_json_keys(raw: bytes) -> Any:
        return from_json(raw, cache_strings="keys")

    decoders: dict[str, Callable[[bytes], Any]] = {
        "json.loads": json.loads,
        "from_json": from_json,
        "from_json(keys)": from_json_keys,
    }

    def call_adapter(raw: bytes) -> Any:
        return client_request.validate_json(raw)

    def call_dispatch(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
        def run(raw: bytes) -> Any:
            message = check_envelope(decode(raw))
            return requests[message["method"]].validate_params(message.get("params"))

        return run

    def list_dispatch(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
        def run(raw: bytes) -> Any:
            message = check_envelope(decode(raw))
            return list_tools.validate_result(message["result"])

        return run

    def list_model_json(raw: bytes) -> Any:
        return list_tools_result.model_validate_json(raw)

    return {
        "call": {
            RUNTIME_CALL: runtime["call"],
            "TypeAdapter(ClientRequest).validate_json(raw)": call_adapter,
            **{
                f"{name} + REQUESTS[method].validate_params": call_dispatch(decode)
                for name, decode in decoders.items()
            },
        },
        "list": {
            RUNTIME_LIST: runtime["list"],
            **{
                f'{name} + REQUESTS["tools/list"].validate_result': list_dispatch(decode)
                for name, decode in decoders.items()
            },
        },
        # Input is the result object's bytes only (no envelope): not like for like, shown apart.
        "list_result_bytes": {
            "ListToolsResult.model_validate_json(result bytes)": list_model_json,
        },
    }


# ---- the official SDK, mcp 2.3.0 ------------------------------------------------------


def sdk_paths() -> dict[str, Callable[[bytes], Any]]:
    """What ``mcp`` 2.3.0 does to each incoming message, with its own functions and types.

    File:line references are to site-packages of ``mcp==2.3.0`` / ``mcp-types==2.3.0``.

    Server receiving a ``tools/call`` request (stdio transport; SSE and streamable HTTP parse
    with the same adapter, ``mcp/server/sse.py:272``, ``mcp/server/streamable_http.py:588``):

    1. ``mcp/server/stdio.py:189``: ``types.jsonrpc_message_adapter.validate_json(line,
       by_name=False)``, the union of the four JSON-RPC envelopes (``mcp_types/jsonrpc.py:
       145-148``) -- validation 1;
    2. ``mcp/shared/jsonrpc_dispatcher.py:566-568``: ``match msg: case JSONRPCRequest()``, and
       ``:740``: ``on_request(dctx, req.method, req.params)`` with the raw params dict;
    3. ``mcp/server/runner.py:181``: ``_extract_meta(params)`` (``:99-107``), which validates
       ``RequestParams`` only when params carry ``_meta`` (this message has none);
    4. ``mcp/server/runner.py:193-195``: ``_methods.validate_client_request(method, version,
       params)`` = ``mcp_types/methods.py:486-501``: rebuilds ``{jsonrpc, id, method, params}``
       and validates the per-version surface ``CallToolRequest`` -- validation 2;
    5. ``mcp/server/runner.py:208`` and ``:216``: ``server.get_request_handler(method)``, then
       ``entry.params_type.model_validate(params, by_name=False)`` where ``params_type`` is
       ``types.CallToolRequestParams`` (``mcp/server/lowlevel/server.py:470``) -- validation 3.

    Client receiving the ``tools/list`` response (``ClientSession.list_tools``,
    ``mcp/client/session.py:1278-1289``, passes ``types.ListToolsResult`` as result type):

    1. ``mcp/client/stdio.py:222``: ``types.jsonrpc_message_adapter.validate_json(line,
       by_name=False)`` -- validation 1;
    2. ``mcp/shared/jsonrpc_dispatcher.py:571-572``: ``case JSONRPCResponse()`` ->
       ``_resolve_pending(msg.id, msg.result)`` (``:678-686``) hands the result dict to the
       waiting ``send_raw_request`` (``:416``, returned at ``:462``);
    3. ``mcp/client/session.py:587-601`` (``send_request``): ``_clamp_inbound_ttl(raw)``;
       ``_methods.validate_server_result(method, version, raw)`` = ``mcp_types/methods.py:
       658-672`` -> ``:634-655``: validates the surface ``ListToolsResult`` and dumps it back
       to a dict -- validation 2 (+ a serialisation); the ``_later_revision_fields`` sieve; then
       ``result_type.model_validate(raw, by_name=False)`` -- validation 3.

    Everything else on those paths (dispatch contexts, middleware, task spawning, the
    tool-listing caches of ``_absorb_tool_listing``) is left out: none of it parses or
    validates.
    """
    from mcp.client.session import _clamp_inbound_ttl, _later_revision_fields
    from mcp.server.lowlevel.server import Server
    from mcp.server.runner import _extract_meta
    from mcp_types import (
        CallToolRequestParams,
        CallToolResult,
        JSONRPCRequest,
        JSONRPCResponse,
        ListToolsResult,
        jsonrpc_message_adapter,
    )
    from mcp_types import methods as _methods

    async def on_call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        return CallToolResult(content=[])

    server: Server[Any] = Server("bench", on_call_tool=on_call_tool)
    version = REVISION  # connection.protocol_version after the handshake

    def receive_request(raw: bytes) -> Any:
        # mcp/server/stdio.py:189
        msg = jsonrpc_message_adapter.validate_json(raw, by_name=False)
        # mcp/shared/jsonrpc_dispatcher.py:566-568, :740
        if not isinstance(msg, JSONRPCRequest):
            raise TypeError("expected a request")
        method, params = msg.method, msg.params
        # mcp/server/runner.py:181
        _extract_meta(params)
        # mcp/server/runner.py:193-197
        if method in _methods.SPEC_CLIENT_METHODS:
            _methods.validate_client_request(method, version, params)
        # mcp/server/runner.py:208-210
        entry = server.get_request_handler(method)
        if entry is None:
            raise LookupError(method)
        # mcp/server/runner.py:216
        return entry.params_type.model_validate({} if params is None else params, by_name=False)

    def receive_list_tools_response(raw: bytes) -> Any:
        # mcp/client/stdio.py:222
        msg = jsonrpc_message_adapter.validate_json(raw, by_name=False)
        # mcp/shared/jsonrpc_dispatcher.py:571-572 -> :678-686 -> :416, :462
        if not isinstance(msg, JSONRPCResponse):
            raise TypeError("expected a result response")
        result = msg.result
        method = "tools/list"
        # mcp/client/session.py:587-601, verbatim but for names
        _clamp_inbound_ttl(result)
        try:  # noqa: SIM105 - the SDK's own statement, kept as is (suppress() costs more)
            _methods.validate_server_result(method, version, result)
        except KeyError:
            pass
        if not (foreign := _later_revision_fields(method, version)).isdisjoint(result):
            result = {key: value for key, value in result.items() if key not in foreign}
        return ListToolsResult.model_validate(result, by_name=False)

    return {"call": receive_request, "list": receive_list_tools_response}


# ---- timing ---------------------------------------------------------------------------


def rate(fn: Callable[[bytes], Any], raw: bytes, count: int) -> tuple[float, float]:
    """(messages per second, CPU microseconds per message) over one batch, gc disabled.
    CPU time is this process's (``time.process_time``): what a busy machine disturbs least."""
    gc.collect()
    gc.disable()
    try:
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            fn(raw)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    finally:
        gc.enable()
    return count / elapsed, cpu / count * 1e6


def compare(
    candidates: Mapping[str, tuple[Callable[[bytes], Any], bytes]],
    count: int,
    settings: Settings,
) -> dict[str, dict[str, Any]]:
    """Warm every candidate, then time them round-robin; medians of messages/s."""
    for fn, raw in candidates.values():
        for _ in range(max(50, int(count * settings.warmup_fraction))):
            fn(raw)
    names = list(candidates)
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(settings.repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            fn, raw = candidates[name]
            messages_s, cpu_us = rate(fn, raw, count)
            samples[name].append(messages_s)
            cpu[name].append(cpu_us)
    results: dict[str, dict[str, Any]] = {
        name: {"samples_msg_s": values, "median_msg_s": median(values), "batch": count,
               "samples_cpu_us": cpu[name], "median_cpu_us": median(cpu[name])}
        for name, values in samples.items()
    }
    if "sdk" in samples:
        # Paired: ours / SDK within each round, then the median; steadier than the ratio of
        # medians when the machine's load drifts during the run.
        for name, values in samples.items():
            ratios = [ours / sdk for ours, sdk in zip(values, samples["sdk"], strict=True)]
            results[name]["paired_ratio_to_sdk"] = median(ratios)
    return results


def require(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"benchmark self-check failed: {message}")


def check_outputs(
    ours: Mapping[str, Mapping[str, Callable[[bytes], Any]]],
    sdk: Mapping[str, Callable[[bytes], Any]],
    call_raw: bytes,
    list_raw: bytes,
    list_result_raw: bytes,
) -> None:
    """Every path must succeed and agree on the content before it is timed."""
    arguments = CALL_TOOL_MESSAGE["params"]["arguments"]
    for name, fn in ours["call"].items():
        parsed = fn(call_raw)
        params = getattr(parsed, "params", parsed)
        require(params.name == "search_issues" and params.arguments == arguments, name)
    sdk_params = sdk["call"](call_raw)
    require(sdk_params.name == "search_issues" and sdk_params.arguments == arguments, "SDK call")
    expected = json.loads(list_result_raw)
    for group, raw in (("list", list_raw), ("list_result_bytes", list_result_raw)):
        for name, fn in ours[group].items():
            dumped = fn(raw).model_dump(mode="json", by_alias=True, exclude_unset=True)
            require(dumped == expected, f"{name}: ListToolsResult does not round-trip")
    sdk_result = sdk["list"](list_raw)
    require(len(sdk_result.tools) == len(expected["tools"]), "SDK tools/list")


def bench_throughput(settings: Settings) -> dict[str, Any]:
    ours = ours_paths()
    sdk = sdk_paths()
    call_raw = encode(CALL_TOOL_MESSAGE)
    response = list_tools_response(20)
    list_raw = encode(response)
    list_result_raw = encode(response["result"])
    check_outputs(ours, sdk, call_raw, list_raw, list_result_raw)

    call = compare(
        {
            **{f"ours: {name}": (fn, call_raw) for name, fn in ours["call"].items()},
            "sdk": (sdk["call"], call_raw),
        },
        settings.call_batch,
        settings,
    )
    tools_list = compare(
        {
            **{f"ours: {name}": (fn, list_raw) for name, fn in ours["list"].items()},
            **{
                f"ours: {name}": (fn, list_result_raw)
                for name, fn in ours["list_result_bytes"].items()
            },
            "sdk": (sdk["list"], list_raw),
        },
        settings.list_batch,
        settings,
    )

    return {
        "tools_call": {
            "message_bytes": len(call_raw),
            "paths": call,
            # Counted: the runtime's own path, whichever alternative happens to be faster.
            "ours_path": f"ours: {RUNTIME_CALL}",
        },
        "tools_list": {
            "message_bytes": len(list_raw),
            "tool_count": 20,
            "paths": tools_list,
            "ours_path": f"ours: {RUNTIME_LIST}",
        },
    }


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def headlines(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The figures the targets are about: ours, SDK, ratio, target, met."""
    out: dict[str, dict[str, Any]] = {}
    gen = report.get("generate")
    if gen is not None:
        seconds = gen["cli"]["median_s"]
        out["generate_all_s"] = {
            "ours": seconds,
            "target": f"< {TARGET_GENERATE_ALL_S:g} s",
            "met": seconds < TARGET_GENERATE_ALL_S,
        }
    for kind in ("total", "net"):
        ours, sdk = (report["import"][f"{who}_{kind}"]["median_s"] for who in ("ours", "sdk"))
        out[f"import_{kind}_s"] = {
            "ours": ours,
            "sdk": sdk,
            "ratio": ours / sdk,
            "target": f"ours/SDK <= {TARGET_IMPORT_RATIO:g}",
            "met": ours / sdk <= TARGET_IMPORT_RATIO,
        }
    for key, target in (("tools_call", TARGET_CALL_SPEEDUP), ("tools_list", TARGET_LIST_SPEEDUP)):
        section = report["throughput"][key]
        ours = section["paths"][section["ours_path"]]["median_msg_s"]
        sdk = section["paths"]["sdk"]["median_msg_s"]
        out[f"{key}_msg_s"] = {
            "ours": ours,
            "sdk": sdk,
            "ratio": ours / sdk,
            "ours_cpu_us": section["paths"][section["ours_path"]]["median_cpu_us"],
            "sdk_cpu_us": section["paths"]["sdk"]["median_cpu_us"],
            "ours_path": section["ours_path"],
            "paired_ratio": section["paths"][section["ours_path"]]["paired_ratio_to_sdk"],
            "target": f"ours/SDK >= {target:g}",
            "met": ours / sdk >= target,
        }
    return out


def render(report: Mapping[str, Any]) -> str:
    """The printed table: headline rows (with target and verdict), detail rows indented."""
    heads = headlines(report)
    rows: list[tuple[str, ...]] = [
        ("measurement (median)", "ours", "SDK mcp 2.3.0", "ratio", "target", "met")
    ]

    def ms(seconds: float) -> str:
        return f"{seconds * 1e3:.1f} ms"

    gen = report.get("generate")
    if gen is not None:
        head = heads["generate_all_s"]
        rows.append(
            (
                "generate all 5 revisions, CLI wall",
                f"{head['ours']:.2f} s",
                "-",
                "-",
                f"< {TARGET_GENERATE_ALL_S:g} s",
                common.verdict(head["met"]),
            )
        )
        for revision, seconds in gen["inprocess"]["median_s"].items():
            rows.append((f"  in-process, {revision}", f"{seconds:.2f} s", "", "", "", ""))
        total = gen["inprocess"]["sum_of_medians_s"]
        rows.append(("  in-process, sum of the 5", f"{total:.2f} s", "", "", "", ""))

    imp = report["import"]
    for kind, label in (("total", "incl. pydantic"), ("net", "net of pydantic")):
        head = heads[f"import_{kind}_s"]
        rows.append(
            (
                f"cold import, {label}",
                ms(head["ours"]),
                ms(head["sdk"]),
                f"{head['ratio']:.2f}x",
                f"<= {TARGET_IMPORT_RATIO:g}x",
                common.verdict(head["met"]),
            )
        )
    for label, ours_key, sdk_key in (
        ("  net, pydantic.fields/types too (info)", "ours_net_full", "sdk_net_full"),
        ("  net, SDK + mcp_types.methods (info)", "ours_net", "sdk_with_methods_net"),
        ("  net, + first tools/call validation (info)", "ours_first_call_net", "sdk_first_call_net"),
    ):
        ours, sdk = imp[ours_key]["median_s"], imp[sdk_key]["median_s"]
        rows.append((label, ms(ours), ms(sdk), f"{ours / sdk:.2f}x", "", ""))

    for key, label, target in (
        ("tools_call", "tools/call request, msg/s", TARGET_CALL_SPEEDUP),
        ("tools_list", "tools/list result (20 tools), msg/s", TARGET_LIST_SPEEDUP),
    ):
        head = heads[f"{key}_msg_s"]
        rows.append(
            (
                label,
                f"{head['ours']:,.0f}",
                f"{head['sdk']:,.0f}",
                f"{head['ratio']:.2f}x",
                f">= {target:g}x",
                common.verdict(head["met"]),
            )
        )
        rows.append(
            (
                "  CPU us per message (ratio: SDK/ours)",
                f"{head['ours_cpu_us']:,.1f}",
                f"{head['sdk_cpu_us']:,.1f}",
                f"{head['sdk_cpu_us'] / head['ours_cpu_us']:.2f}x",
                "",
                "",
            )
        )
        for name, figures in report["throughput"][key]["paths"].items():
            if name == "sdk":
                continue
            marker = "*" if name == head["ours_path"] else " "
            rate_ = figures["median_msg_s"]
            rows.append(
                (
                    f" {marker}{name.removeprefix('ours: ')}",
                    f"{rate_:,.0f}",
                    "",
                    f"{rate_ / head['sdk']:.2f}x",
                    "",
                    "",
                )
            )

    env = report["environment"]
    header = (
        f"mcp-codegen benchmark: {PACKAGE} vs {SDK_REQUIREMENT} | python {env['python']}, "
        f"pydantic {env['pydantic']} (core {env['pydantic-core']}), mcp {env['mcp']}, "
        f"{env['cpus']} CPUs\nsettings: {report['settings']}"
    )
    throughput = report["throughput"]
    notes = [
        "ratio: import = ours/SDK seconds (lower is better); throughput = ours/SDK msg/s "
        "(higher is better)",
        "* = the path counted as 'ours': the runtime's own (from_json(allow_inf_nan=False, "
        "cache_strings='keys'), the engine's envelope checks, the method's RequestSpec); the "
        "other paths are alternatives, for information, never counted",
        f"messages: tools/call {throughput['tools_call']['message_bytes']:,} bytes, "
        f"tools/list {throughput['tools_list']['message_bytes']:,} bytes; paired ratio (median "
        f"of per-round ours/SDK): tools/call {heads['tools_call_msg_s']['paired_ratio']:.2f}x, "
        f"tools/list {heads['tools_list_msg_s']['paired_ratio']:.2f}x",
    ]
    start_load, end_load = report.get("load_average_start"), report.get("load_average_end")
    if start_load is not None and end_load is not None:
        busy = start_load > 0.5 * int(env["cpus"] or 1)
        notes.append(
            f"1-min load average at start/end: {start_load:.2f}/{end_load:.2f}"
            + ("  (other work was running before the start: expect noisy figures)" if busy else "")
        )
    if gen is not None:
        notes += [
            "generated output identical to generated/mcp_generated: "
            f"{gen['cli']['output_matches_committed']}",
            f"in-process: one child interpreter, revisions one after another; its first call "
            f"({RELEASED[0]}, cold generator imports) took {gen['inprocess']['first_call_s']:.2f} s",
        ]
    return "\n".join([header, "", common.table(rows), "", *notes])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="fewer samples: a CI smoke run (< 60 s)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        metavar="N",
        help="samples per measurement (imports: at least 7)",
    )
    parser.add_argument(
        "--json", type=Path, default=None, metavar="PATH", help="also write every figure to PATH"
    )
    parser.add_argument(
        "--schema-dir",
        default=None,
        help="folder with <revision>/schema.json [env: MCP_CODEGEN_SCHEMA_DIR]",
    )
    parser.add_argument("--skip-generate", action="store_true", help="skip the generation timing")
    args = parser.parse_args(argv)

    settings = Settings.make(quick=args.quick, repeats=args.repeats)
    schema_dir = schema_dir_from(args.schema_dir)
    env = common.versions("mcp-types")
    if env["mcp"] == "not installed":
        sys.exit(f"the comparison needs the official SDK: pip install '{SDK_REQUIREMENT}'")
    if env["mcp"] != SDK_REQUIREMENT.split("==")[1]:
        print(
            f"warning: mcp {env['mcp']} installed; the SDK path reproduced here (and its "
            f"file:line references) is that of {SDK_REQUIREMENT}",
            file=sys.stderr,
        )
    started = time.perf_counter()
    report: dict[str, Any] = {
        "revision": REVISION,
        "sdk": SDK_REQUIREMENT,
        "environment": env,
        "settings": {
            "generate_runs": settings.generate_runs,
            "import_runs": settings.import_runs,
            "repeats": settings.repeats,
            "call_batch": settings.call_batch,
            "list_batch": settings.list_batch,
        },
    }
    report["load_average_start"] = common.load_average()
    print("measuring throughput ...", file=sys.stderr)
    report["throughput"] = bench_throughput(settings)
    print("measuring cold imports ...", file=sys.stderr)
    report["import"] = bench_imports(settings.import_runs)
    if not args.skip_generate:
        print("measuring generation ...", file=sys.stderr)
        report["generate"] = {
            "cli": bench_generate_cli(schema_dir, settings.generate_runs),
            "inprocess": bench_generate_inprocess(schema_dir, settings.generate_runs),
        }
    report["elapsed_s"] = time.perf_counter() - started
    report["load_average_end"] = common.load_average()
    report["headlines"] = headlines(report)
    print(render(report))
    print(f"\n(benchmark took {report['elapsed_s']:.0f} s)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
