"""A service that vendors a generated package installs the runtime alone, and it works.

In a fresh virtual environment: ``pip install ./runtime`` (its dependencies from the package
index) brings pydantic and jsonschema and nothing of the generator; a copy of a generated
package under a name of the service's own (``vendor/acme_mcp``) serves and calls a tool with
an inputSchema and an outputSchema over stdio; then ``pip install './runtime[http]'`` adds
the HTTP server and the same runs over Streamable HTTP (uvicorn). Checked each time: a good
call works, bad arguments get the argument error (not -32603), and structured output that
breaks the outputSchema is caught by the client. ``examples/weather_server.py`` runs in the
same environment. The runtime's folder is copied out first (with ``generated/``, which it
ships), so nothing is built inside the repository.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO_ROOT

#: The generator and what only it needs: none of them may come with the runtime.
GENERATOR_ONLY = ("typedmcp_codegen", "datamodel_code_generator", "black", "jinja2", "click")
VENDORED = "v2025_11_25"

SERVER = textwrap.dedent(
    '''
    """A service's MCP server on its vendored package: ``server.py stdio|http strict|lax``."""
    import socket
    import sys

    from typedmcp import RequestContext, http_app, run_stdio
    from vendor.acme_mcp import models, server

    SUM = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
    ADD = models.Tool(
        name="add",
        input_schema=models.ToolInputSchema(
            type="object",
            properties={"a": {"type": "integer"}, "b": {"type": "integer"}},
            required=["a", "b"],
        ),
        output_schema=SUM,
    )
    # answers with structured output that breaks its own outputSchema
    MISCOUNT = models.Tool(
        name="miscount", input_schema=models.ToolInputSchema(type="object"), output_schema=SUM
    )


    class Calculator(server.ServerHandlers):
        async def list_tools(self, params, ctx: RequestContext) -> models.ListToolsResult:
            return models.ListToolsResult(tools=[ADD, MISCOUNT])

        async def call_tool(self, params, ctx: RequestContext) -> models.CallToolResult:
            arguments = params.arguments or {}
            total = "many" if params.name == "miscount" else arguments["a"] + arguments["b"]
            return models.CallToolResult(
                content=[models.TextContent(text=str(total))], structured_content={"sum": total}
            )


    transport, mode = sys.argv[1:3]
    # lax: the server checks no tool schema (so the client's output check is what catches
    # the miscount); strict, the default: arguments and output are checked
    options = {"validate_tools": mode == "strict"}
    if transport == "stdio":
        run_stdio(Calculator(), **options)
    else:
        import uvicorn

        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(100)  # connections wait in the backlog until uvicorn accepts
        print(listener.getsockname()[1], flush=True)
        config = uvicorn.Config(http_app(Calculator(), **options), log_level="warning")
        uvicorn.Server(config).run(sockets=[listener])
    '''
)

CLIENT = textwrap.dedent(
    '''
    """Calls the service's server: ``client.py stdio|URL strict|lax``."""
    import asyncio
    import json
    import sys

    import vendor.acme_mcp as acme
    from typedmcp import ToolOutputError, connect_http, connect_stdio


    async def main() -> None:
        target, mode = sys.argv[1:3]
        if target == "stdio":
            connection = connect_stdio([sys.executable, "server.py", "stdio", mode], protocol=acme)
        else:
            connection = connect_http(target, protocol=acme)
        report = {}
        async with connection as client:
            report["revision"] = client.session.protocol_version
            listed = await client.list_tools()
            report["tools"] = sorted(tool.name for tool in listed.tools)
            good = await client.call_tool(name="add", arguments={"a": 2, "b": 3})
            report["good"] = [good.is_error, good.structured_content, good.content[0].text]
            if mode == "strict":  # the lax server does not check arguments
                bad = await client.call_tool(name="add", arguments={"a": "two"})
                report["bad_arguments"] = [bad.is_error, bad.content[0].text]
            try:
                wrong = await client.call_tool(name="miscount", arguments={})
                report["bad_output"] = ["returned", wrong.model_dump(mode="json", by_alias=True)]
            except ToolOutputError as error:
                report["bad_output"] = ["ToolOutputError", str(error)]
            except Exception as error:  # the strict server refuses it itself
                report["bad_output"] = [type(error).__name__, str(error)]
        print(json.dumps(report))


    asyncio.run(asyncio.wait_for(main(), 60))
    '''
)

WEATHER_CLIENT = textwrap.dedent(
    '''
    import asyncio
    import json
    import sys

    from typedmcp import connect_stdio


    async def main() -> None:
        async with connect_stdio([sys.executable, sys.argv[1]]) as client:
            good = await client.call_tool(name="weather", arguments={"city": "Oslo"})
            bad = await client.call_tool(name="weather", arguments={"town": "Oslo"})
            print(json.dumps({
                "revision": client.session.protocol_version,
                "good": good.content[0].text,
                "bad": [bad.is_error, bad.content[0].text],
            }))


    asyncio.run(asyncio.wait_for(main(), 60))
    '''
)


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """(the service's folder, its venv's python, the environment) with ``./runtime`` alone
    installed: no extra yet."""
    base = tmp_path_factory.mktemp("runtime-only")
    source = base / "src"
    shutil.copytree(
        REPO_ROOT / "runtime", source / "runtime",
        ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"),
    )
    shutil.copytree(
        REPO_ROOT / "generated" / "mcp_generated", source / "generated" / "mcp_generated",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    env = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "MCP_CODEGEN"))
    }
    env.update(PYTHONNOUSERSITE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)], base, env, timeout=120)
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", str(source / "runtime")], base, env, timeout=420)
    app = base / "app"
    shutil.copytree(
        REPO_ROOT / "generated" / "mcp_generated" / VENDORED, app / "vendor" / "acme_mcp",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (app / "server.py").write_text(SERVER)
    (app / "client.py").write_text(CLIENT)
    (app / "weather_client.py").write_text(WEATHER_CLIENT)
    yield app, python, env


def test_the_runtime_installs_without_the_generator(service: tuple[Path, Path, dict[str, str]]) -> None:
    app, python, env = service
    script = (
        "import importlib.util, json, typedmcp, mcp_generated\n"
        f"absent = {GENERATOR_ONLY!r}\n"
        "print(json.dumps({\n"
        "    'present': [n for n in absent if importlib.util.find_spec(n) is not None],\n"
        "    'runtime': typedmcp.__file__, 'generated': sorted(mcp_generated.REVISIONS),\n"
        "    'jsonschema': importlib.util.find_spec('jsonschema') is not None,\n"
        "}))\n"
    )
    report = json.loads(run([str(python), "-c", script], app, env, timeout=60))
    assert report["present"] == []
    assert report["runtime"].startswith(str(python.parent.parent)), "not the installed runtime"
    assert report["generated"] == ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
    assert report["jsonschema"] is True


def check(report: dict[str, object], *, strict: bool) -> None:
    assert report["revision"] == "2025-11-25"
    assert report["tools"] == ["add", "miscount"]
    assert report["good"] == [None, {"sum": 5}, "5"]
    kind, detail = report["bad_output"]  # type: ignore[misc]
    if strict:
        # 2025-11-25: invalid arguments are a tool error result naming the problem (not
        # -32603, as when the runtime lacked jsonschema)
        is_error, text = report["bad_arguments"]  # type: ignore[misc]
        assert is_error is True
        assert text.startswith("Invalid arguments for tool add: "), text
        assert "'two' is not of type 'integer'" in text and "'b' is a required property" in text
        # the server checks its own output and refuses to send it
        assert kind == "RpcError" and "Internal error" in detail, report["bad_output"]
    else:
        assert kind == "ToolOutputError", report["bad_output"]
        assert "tool miscount returned output that breaks its outputSchema" in detail
        assert "'many' is not of type 'integer'" in detail


@pytest.mark.parametrize("mode", ["strict", "lax"])
def test_a_vendored_package_serves_and_calls_over_stdio(
    service: tuple[Path, Path, dict[str, str]], mode: str
) -> None:
    app, python, env = service
    report = json.loads(run([str(python), "client.py", "stdio", mode], app, env, timeout=120))
    check(report, strict=mode == "strict")


def test_the_example_server_runs_on_the_runtime_alone(service: tuple[Path, Path, dict[str, str]]) -> None:
    app, python, env = service
    example = REPO_ROOT / "examples" / "weather_server.py"
    report = json.loads(run([str(python), "weather_client.py", str(example)], app, env, timeout=120))
    assert report["revision"] == "2026-07-28"
    assert report["good"] == "Sunny in Oslo"
    assert report["bad"][0] is True
    assert report["bad"][1].startswith("Invalid arguments for tool weather: ")
    # the other examples import nothing the runtime lacks
    for name in ("conformance_server.py", "conformance_client.py"):
        path = REPO_ROOT / "examples" / name
        run([str(python), "-c", f"import runpy; runpy.run_path({str(path)!r}, run_name='example')"],
            app, env, timeout=60)


@pytest.fixture(scope="module")
def http_service(service: tuple[Path, Path, dict[str, str]]) -> tuple[Path, Path, dict[str, str]]:
    app, python, env = service
    source = python.parent.parent.parent / "src" / "runtime"
    run([str(python), "-m", "pip", "install", "-q", f"{source}[http]"], app, env, timeout=420)
    return service


@pytest.mark.parametrize("mode", ["strict", "lax"])
def test_a_vendored_package_serves_and_calls_over_http(
    http_service: tuple[Path, Path, dict[str, str]], mode: str
) -> None:
    app, python, env = http_service
    server = subprocess.Popen(
        [str(python), "server.py", "http", mode], cwd=app, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], 60)
        assert ready, "the HTTP server printed no port within 60 s"
        port = int(server.stdout.readline())
        url = f"http://127.0.0.1:{port}/mcp"
        report = json.loads(run([str(python), "client.py", url, mode], app, env, timeout=120))
    finally:
        server.kill()
        server.communicate(timeout=30)
    check(report, strict=mode == "strict")
