"""Runtime input hardening (issue 29, requirements 2 and 6): numbers too large for a float
are refused where a peer's JSON is parsed (the transports' own tests are in
``test_hardening_engine.py``, parametrized with :data:`OVERFLOWING`), a POST cut short by a
hang-up is never executed, a body dribbled and stopped is answered 408 after the body-read
time limit, and a made-up session id does not log a warning per request.
(Resource template variables: ``test_app_resources_prompts.py``.)"""

from __future__ import annotations

import json

import pytest
from test_hardening_engine import OVERFLOWING
from test_http_server import (  # the autouse fixture: hang up leftovers, re-raise app errors
    _no_exchange_left_running,  # noqa: F401
    call,
    initialize,
    send,
)

from typedmcp.app import McpApp
from typedmcp.engine.jsonrpc import PARSE_ERROR, NonFiniteNumber, decode
from typedmcp.serving import http_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# == numbers too large for a float =============================================================


LARGEST = "1.7976931348623157e308"  # the largest float


@pytest.mark.parametrize(
    "literal",
    [
        *OVERFLOWING,
        "1.8e308",
        "1e0400",
        "-1e+0309",
        "9" * 309 + ".0",  # 309 digits before the point, no exponent
        "9" * 210 + ".5e99",  # 210 digits and a two-digit exponent
        "1" + "0" * 400 + "e-50",  # a long mantissa brings a negative exponent over
    ],
)
async def test_a_number_too_large_for_a_float_is_refused_naming_it(literal: str) -> None:
    data = b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"x": [1, ' + literal.encode() + b"]}}"
    with pytest.raises(NonFiniteNumber) as refused:
        decode(data)
    named = literal if len(literal) <= 40 else f"{literal[:40]}... ({len(literal) - 40} more characters)"
    assert str(refused.value) == (
        f"the number {named} is too large for a float (it would be read as infinity, which JSON "
        "cannot carry): send a smaller number, or the value as a string"
    )
    assert refused.value.request_id == 3


@pytest.mark.parametrize(
    "literal",
    [
        LARGEST,
        "-" + LARGEST,
        "1e-400",  # underflows to 0.0: finite
        "0e999",
        "9" * 308 + ".0",  # 308 digits: 9.99e307, finite
        "1" + "0" * 209 + "e99",  # 210 digits and e99: 1e308, finite
        "1" + "0" * 400,  # an integer: Python's int, not a float
        '"1e400"',  # a string
        '"' + "1" * 400 + '.0"',
    ],
)
async def test_a_finite_number_or_a_string_that_looks_large_is_read(literal: str) -> None:
    data = b'{"x": [' + literal.encode() + b"]}"
    assert decode(data) == json.loads(data)


async def test_the_id_of_a_refused_number_is_a_requests_own() -> None:
    """Only a request's id is answered: not a response's, a notification's, a batch's, nor an
    id MCP does not allow."""
    for data, request_id in [
        (b'{"jsonrpc": "2.0", "id": "a", "method": "m", "params": {"x": 1e400}}', "a"),
        (b'{"jsonrpc": "2.0", "id": 4, "result": {"x": 1e400}}', None),
        (b'{"jsonrpc": "2.0", "method": "m", "params": {"x": 1e400}}', None),
        (b'[{"jsonrpc": "2.0", "id": 5, "method": "m", "params": {"x": 1e400}}]', None),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "m", "params": {"x": 1e400}}', None),
        (b'{"jsonrpc": "2.0", "id": true, "method": "m", "params": {"x": 1e400}}', None),
    ]:
        with pytest.raises(NonFiniteNumber) as refused:
            decode(data)
        assert refused.value.request_id == request_id, data


async def test_a_float_tool_never_runs_with_infinity_and_its_caller_gets_a_parse_error() -> None:
    """The issue's tool: ``x: float`` got ``inf`` from ``1e400`` and answered
    ``structuredContent {"result": null}`` against its own output schema."""
    app = McpApp("floats")
    seen: list[float] = []

    @app.tool()
    def double(x: float) -> float:
        seen.append(x)
        return 2 * x

    served = http_app(app)
    session = await initialize(served)
    body = json.dumps(call(1, "double", {"x": 0})).replace('{"x": 0}', '{"x": 1e400}').encode()
    refused = await send(served, body=body, session=session)
    assert refused.status == 400
    error = refused.json()["error"]
    assert error["code"] == PARSE_ERROR
    assert error["message"].startswith("Parse error: the number 1e400 is too large for a float")
    fine = await send(served, body=call(2, "double", {"x": 1.5}), session=session)
    assert fine.json()["result"]["structuredContent"] == {"result": 3.0}
    assert seen == [1.5]
