"""A future, unpinned revision generates without touching the generator.

The synthetic revision 2026-12-01 is 2026-07-28 plus a new request ``widgets/frobnicate``
(request, params, result, result response, a ``widgets`` server capability) and a new
optional field ``Tool.widgetHint``.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import inspect
import json
import sys
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from typedmcp_codegen import cli
from typedmcp_codegen.load import SCHEMA_DIR_ENV
from typedmcp.protocol.spec import Direction, Gate, RequestSpec

REVISION = "2026-12-01"
PACKAGE = "mcp_future_revision_2026_12_01"


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def future_schema(base: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(base)
    defs = document["$defs"]
    defs["FrobnicateWidgetRequest"] = {
        "description": "Sent from the client to frobnicate one widget.",
        "properties": {
            "id": ref("RequestId"),
            "jsonrpc": {"const": "2.0", "type": "string"},
            "method": {"const": "widgets/frobnicate", "type": "string"},
            "params": ref("FrobnicateWidgetRequestParams"),
        },
        "required": ["id", "jsonrpc", "method", "params"],
        "type": "object",
    }
    defs["FrobnicateWidgetRequestParams"] = {
        "description": "Parameters of a `widgets/frobnicate` request.",
        "properties": {
            "_meta": ref("RequestMetaObject"),
            "widgetId": {"description": "The widget to frobnicate.", "type": "string"},
            "intensity": {"description": "How hard, from 0 to 1.", "type": "number"},
        },
        "required": ["_meta", "widgetId"],
        "type": "object",
    }
    defs["FrobnicateWidgetResult"] = {
        "description": "The result of a `widgets/frobnicate` request.",
        "properties": {
            "_meta": ref("ResultMetaObject"),
            "resultType": {"type": "string"},
            "frobnicated": {"description": "Whether it worked.", "type": "boolean"},
        },
        "required": ["frobnicated", "resultType"],
        "type": "object",
    }
    defs["FrobnicateWidgetResultResponse"] = {
        "description": "A successful response to a `widgets/frobnicate` request.",
        "properties": {
            "id": ref("RequestId"),
            "jsonrpc": {"const": "2.0", "type": "string"},
            "result": ref("FrobnicateWidgetResult"),
        },
        "required": ["id", "jsonrpc", "result"],
        "type": "object",
    }
    defs["ClientRequest"]["anyOf"].append(ref("FrobnicateWidgetRequest"))
    defs["ServerResult"]["anyOf"].append(ref("FrobnicateWidgetResult"))
    defs["ServerCapabilities"]["properties"]["widgets"] = {
        "description": "Present if the server has widgets.",
        "properties": {},
        "type": "object",
    }
    defs["Tool"]["properties"]["widgetHint"] = {
        "description": "Which widget the tool works on.",
        "type": "string",
    }
    return document


@pytest.fixture(scope="module")
def future_package(
    spec_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ModuleType, str]]:
    """Generate the synthetic revision with the CLI, then import it."""
    root = tmp_path_factory.mktemp("future")
    schema_file = root / "schema.json"
    base = json.loads((spec_dir / "2026-07-28" / "schema.json").read_text())
    schema_file.write_text(json.dumps(future_schema(base), indent=2))
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(SCHEMA_DIR_ENV, raising=False)
        result = CliRunner().invoke(
            cli.main,
            ["--schema", str(schema_file), "--version", REVISION, "--out", str(root / PACKAGE)],
        )
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield importlib.import_module(PACKAGE), result.stderr
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def module(package: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{package.__name__}.{name}")


def test_cli_says_the_revision_is_unpinned(future_package: tuple[ModuleType, str]) -> None:
    package, stderr = future_package
    assert f"notice: revision {REVISION} is not pinned" in stderr
    assert "without verification" in stderr
    assert package.PROTOCOL_VERSION == REVISION
    assert package.ERA == "stateless"


def test_new_method_is_in_the_dispatch_table(future_package: tuple[ModuleType, str]) -> None:
    package, _ = future_package
    dispatch, models = module(package, "dispatch"), module(package, "models")
    spec = dispatch.REQUESTS["widgets/frobnicate"]
    assert spec is dispatch.FROBNICATE_WIDGET
    assert spec.params_type is models.FrobnicateWidgetRequestParams
    assert spec.result_type is models.FrobnicateWidgetResult
    assert spec.alternative_result_types == ()
    assert spec.direction is Direction.CLIENT_TO_SERVER
    assert spec.params_required is True
    assert spec.handler_name == "frobnicate_widget"
    assert spec.gates == (Gate("server", ("widgets",)),)
    assert "tools/call" in dispatch.REQUESTS  # the rest of 2026-07-28 is still there


def test_client_has_a_typed_frobnicate_widget_method(
    future_package: tuple[ModuleType, str],
) -> None:
    package, _ = future_package
    client, models = module(package, "client"), module(package, "models")
    method = client.Client.frobnicate_widget
    assert inspect.iscoroutinefunction(method)
    hints = typing.get_type_hints(method)
    assert hints["widget_id"] is str
    assert hints["return"] is models.FrobnicateWidgetResult
    assert inspect.signature(method).parameters["intensity"].default is None

    class Recorder:
        def __init__(self) -> None:
            self.sent: list[tuple[RequestSpec[Any], Mapping[str, Any] | None]] = []

        async def send_request(
            self, spec: RequestSpec[Any], params: Mapping[str, Any] | None
        ) -> Any:
            self.sent.append((spec, params))
            return spec.validate_result({"frobnicated": True, "resultType": "complete"})

        async def send_notification(self, spec: Any, params: Any) -> None:
            raise AssertionError("no notification expected")

    sender = Recorder()
    result = asyncio.run(client.Client(sender).frobnicate_widget(widget_id="w-1", intensity=0.5))
    assert isinstance(result, models.FrobnicateWidgetResult)
    assert result.frobnicated is True
    [(spec, params)] = sender.sent
    assert spec.method == "widgets/frobnicate"
    assert params == {"widgetId": "w-1", "intensity": 0.5}


def test_server_handlers_have_a_typed_frobnicate_widget_method(
    future_package: tuple[ModuleType, str],
) -> None:
    package, _ = future_package
    server, models = module(package, "server"), module(package, "models")
    method = server.ServerHandlers.frobnicate_widget
    assert inspect.iscoroutinefunction(method)
    hints = typing.get_type_hints(method)
    assert hints["params"] is models.FrobnicateWidgetRequestParams
    assert hints["return"] is models.FrobnicateWidgetResult

    class Widgets(server.ServerHandlers):  # type: ignore[name-defined,misc]
        async def frobnicate_widget(self, params: Any, ctx: Any) -> Any:
            return models.FrobnicateWidgetResult(frobnicated=True, result_type="complete")

    implemented = Widgets.implemented(server.ServerHandlers, ("frobnicate_widget", "call_tool"))
    assert implemented == frozenset({"frobnicate_widget"})


def test_new_optional_field_parses_and_dumps(future_package: tuple[ModuleType, str]) -> None:
    package, _ = future_package
    models = module(package, "models")
    wire = {"name": "t", "inputSchema": {"type": "object"}, "widgetHint": "gear"}
    tool = models.Tool.model_validate(wire)
    assert tool.widget_hint == "gear"
    assert tool.model_dump(mode="json", exclude_unset=True) == wire
    assert (
        models.Tool.model_validate({"name": "t", "inputSchema": {"type": "object"}}).widget_hint
        is None
    )
