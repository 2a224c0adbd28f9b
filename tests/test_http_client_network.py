"""The HTTP client on the real internet's terms (issue 10), with real parts the tests start:
uvicorn serving our app over TLS with a test CA (``trustme``), a client certificate required
in one test; a forwarding proxy (``proxy.py``) for http and for https (CONNECT); HAProxy
pinning sessions with a cookie in front of two servers; redirects, time limits and a
session of the user's own.

Every server listens on 127.0.0.1 on a free port and is stopped by its fixture; every wait
is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import trustme
from test_http_server import ServerThread, Tools, make_app
from test_oauth_client import World, provider

import mcp_generated.v2024_11_05
import mcp_generated.v2025_11_25
import mcp_generated.v2025_11_25.client
import mcp_generated.v2026_07_28
from typedmcp.auth.fetch import auto_approve, http_fetch
from typedmcp.connecting import connect_http, connect_sse
from typedmcp.serving import http_app
from typedmcp.transports.http_client import ResponseLost
from typedmcp.transports.http_wire import (
    HttpTimeouts,
    InsecureTlsWarning,
    RedirectNotFollowed,
    ServerUnreachable,
    TlsError,
)

pytestmark = pytest.mark.anyio

HANDSHAKE = mcp_generated.v2025_11_25
STATELESS = mcp_generated.v2026_07_28
ERAS = [pytest.param(HANDSHAKE, id="2025-11-25"), pytest.param(STATELESS, id="2026-07-28")]
LIMIT = 30  # seconds any one exchange of these tests may take, at most


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]


async def one_call(url: str, **options: Any) -> list[str]:
    """Connect, call ``echo`` once, return its text."""
    async def run() -> list[str]:
        async with connect_http(url, **options) as client:
            return texts(await client.call_tool(name="echo", arguments={"n": 1}))

    return await asyncio.wait_for(run(), LIMIT)


# -- a test CA, its certificates, TLS servers -------------------------------------------------


@dataclass
class Pki:
    ca: trustme.CA
    ca_pem: str  # the CA bundle a client trusts
    server_cert: str  # certificate chain + key of 127.0.0.1 / localhost
    server_key: str
    client_cert: str  # a client certificate the CA issued (mutual TLS)
    client_key: str
    other_ca_pem: str  # a CA that signed nothing here
    elsewhere_cert: str  # a certificate the CA issued for localhost only
    elsewhere_key: str


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca, other = trustme.CA(), trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("client.example")
    elsewhere = ca.issue_cert("localhost")
    paths: dict[str, str] = {}
    for name, blob in {
        "ca.pem": ca.cert_pem,
        "other.pem": other.cert_pem,
        "server.pem": server.cert_chain_pems[0],
        "server.key": server.private_key_pem,
        "client.pem": client.cert_chain_pems[0],
        "client.key": client.private_key_pem,
        "elsewhere.pem": elsewhere.cert_chain_pems[0],
        "elsewhere.key": elsewhere.private_key_pem,
    }.items():
        blob.write_to_path(str(folder / name))
        paths[name] = str(folder / name)
    return Pki(ca, paths["ca.pem"], paths["server.pem"], paths["server.key"],
               paths["client.pem"], paths["client.key"], paths["other.pem"],
               paths["elsewhere.pem"], paths["elsewhere.key"])


def tls_options(pki: Pki, *, client_cert_required: bool = False) -> dict[str, Any]:
    options: dict[str, Any] = {"ssl_certfile": pki.server_cert, "ssl_keyfile": pki.server_key}
    if client_cert_required:
        options.update(ssl_ca_certs=pki.ca_pem, ssl_cert_reqs=ssl.CERT_REQUIRED)
    return options


@contextlib.contextmanager
def https_server(pki: Pki, app: Any = None, **options: Any) -> Iterator[ServerThread]:
    with ServerThread(app if app is not None else make_app(), **tls_options(pki, **options)) as server:
        assert server.url.startswith("https://")
        yield server


@pytest.mark.parametrize("package", ERAS)
async def test_https_with_a_custom_ca_bundle_and_with_an_ssl_context(pki: Pki, package: Any) -> None:
    """Regression: connect_http refused every https:// URL ("only http:// URLs are
    supported")."""
    with https_server(pki) as server:
        assert await one_call(server.url, protocol=package, verify=pki.ca_pem) == ['{"n": 1}']
        context = ssl.create_default_context(cafile=pki.ca_pem)
        assert await one_call(server.url, protocol=package, verify=context) == ['{"n": 1}']
        methods = {entry["method"] for entry in server.log}
        assert methods == ({"POST", "GET", "DELETE"} if package is HANDSHAKE else {"POST"})


async def test_https_with_the_default_trust_store(pki: Pki, tmp_path: Path) -> None:
    """With no ``verify``, the system trust store decides: a client process whose OpenSSL
    trust store is the test CA (``SSL_CERT_FILE``, as a system bundle would hold it)
    connects; the same call in this process, whose store does not know the CA, is refused
    with one clear message naming the host and what to pass."""
    script = tmp_path / "client.py"
    script.write_text(textwrap.dedent("""
        import asyncio, sys
        from typedmcp import connect_http

        async def main() -> None:
            async with connect_http(sys.argv[1]) as client:
                result = await client.call_tool(name="echo", arguments={"n": 1})
                print(result.content[0].text)

        asyncio.run(main())
    """))
    with https_server(pki) as server:
        env = {**os.environ, "SSL_CERT_FILE": pki.ca_pem}
        env.pop("SSL_CERT_DIR", None)
        done = await asyncio.create_subprocess_exec(
            sys.executable, str(script), server.url, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(done.communicate(), LIMIT)
        assert done.returncode == 0, err.decode()
        assert out.decode().strip() == '{"n": 1}'
        with pytest.raises(TlsError) as raised:
            await one_call(server.url)
    message = str(raised.value)
    assert f"127.0.0.1:{server.port}" in message
    assert "not trusted" in message and "verify=" in message
    assert "Traceback" not in message


async def test_a_certificate_from_another_ca_or_for_another_host_is_refused(pki: Pki) -> None:
    with https_server(pki) as server, pytest.raises(TlsError, match=r"not trusted.*verify="):
        await one_call(server.url, verify=pki.other_ca_pem)
    named_elsewhere = {"ssl_certfile": pki.elsewhere_cert, "ssl_keyfile": pki.elsewhere_key}
    with ServerThread(make_app(), **named_elsewhere) as server:  # a certificate for localhost only
        with pytest.raises(TlsError) as raised:
            await one_call(server.url, verify=pki.ca_pem)
        assert server.log == []
    assert "127.0.0.1" in str(raised.value) and "not trusted" in str(raised.value)


async def test_mutual_tls_needs_the_client_certificate(pki: Pki) -> None:
    """A server that requires a client certificate: with ``cert=`` the call goes through;
    without, one clear error names the host and ``cert=``, and nothing reached the app."""
    with https_server(pki, client_cert_required=True) as server:
        cert = (pki.client_cert, pki.client_key)
        assert await one_call(server.url, verify=pki.ca_pem, cert=cert) == ['{"n": 1}']
        served = len(server.log)
        with pytest.raises(TlsError) as raised:
            await one_call(server.url, verify=pki.ca_pem)
        assert len(server.log) == served
    assert f"127.0.0.1:{server.port}" in str(raised.value)
    assert "cert=" in str(raised.value)


async def test_verify_false_connects_with_a_warning(pki: Pki) -> None:
    with https_server(pki) as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert await one_call(server.url, verify=False) == ['{"n": 1}']
    assert [w for w in caught if issubclass(w.category, InsecureTlsWarning)]


async def test_bad_trust_options_are_refused_up_front(pki: Pki) -> None:
    with pytest.raises(ValueError, match="no such CA bundle"):
        await one_call("https://127.0.0.1:9/mcp", verify="/nowhere/ca.pem")
    context = ssl.create_default_context()
    with pytest.raises(ValueError, match="load_cert_chain"):
        await one_call("https://127.0.0.1:9/mcp", verify=context, cert=pki.client_cert)
    with pytest.raises(ValueError, match="cannot load the client certificate"):
        await one_call("https://127.0.0.1:9/mcp", cert=(pki.ca_pem, pki.ca_pem))  # no key
    with pytest.raises(ValueError, match="not a PEM CA bundle"):
        await one_call("https://127.0.0.1:9/mcp", verify=__file__)
    with pytest.raises(ValueError, match="http://"):
        await one_call("ftp://127.0.0.1/mcp")


async def test_http_sse_over_https(pki: Pki) -> None:
    """The deprecated HTTP+SSE transport on the same library: over TLS too."""
    app = http_app(Tools(), legacy_sse=True, server_info={"name": "s", "version": "1"})
    with https_server(pki, app) as server:
        url = server.url.removesuffix("/mcp") + "/sse"
        async with connect_sse(url, protocol=mcp_generated.v2024_11_05, verify=pki.ca_pem) as client:
            result = await asyncio.wait_for(client.call_tool(name="echo", arguments={"x": 1}), LIMIT)
        assert texts(result) == ['{"x": 1}']
        assert client.session.transport_kind == "sse"


async def test_oauth_discovery_and_tokens_against_an_https_authorization_server(pki: Pki) -> None:
    """Metadata, registration, authorization and token requests all reach an https
    authorization server, trusting the connection's CA."""
    world = World()
    with https_server(pki, world) as server:
        world.base = f"https://127.0.0.1:{server.port}"
        agent = auto_approve(functools.partial(http_fetch, verify=pki.ca_pem))
        auth = provider(world, user_agent=agent)
        async with connect_http(world.url, protocol=HANDSHAKE, auth=auth, verify=pki.ca_pem) as client:
            await asyncio.wait_for(client.call_tool(name="echo", arguments={}), LIMIT)
    paths = world.paths()
    assert "/register" in paths and "/token" in paths and world.served > 0


# -- proxies -------------------------------------------------------------------------------------


@dataclass
class Proxy:
    url: str
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    async def saw(self, text: str) -> bool:
        """Whether the proxy's access log names ``text`` (it writes when a connection ends)."""
        for _ in range(100):
            if any(text in line for line in self.lines()):
                return True
            await asyncio.sleep(0.05)
        return False


@pytest.fixture
def forward_proxy(tmp_path: Path) -> Iterator[Proxy]:
    """proxy.py, a forwarding proxy (absolute-form requests, CONNECT tunnels), on 127.0.0.1."""
    port_file, log = tmp_path / "proxy.port", tmp_path / "proxy.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "proxy", "--hostname", "127.0.0.1", "--port", "0",
         "--port-file", str(port_file), "--num-workers", "1", "--num-acceptors", "1",
         "--log-file", str(log), "--log-level", "INFO"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: proxy.py forks workers
    )
    try:
        deadline = time.monotonic() + LIMIT
        while not (port_file.exists() and port_file.read_text().strip()):
            assert process.poll() is None and time.monotonic() < deadline, "proxy.py did not start"
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with socket.create_connection(("127.0.0.1", port), timeout=LIMIT):
            pass  # it accepts
        yield Proxy(f"http://127.0.0.1:{port}", log)
    finally:
        # the whole group: killing only the parent left its worker processes running
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


@pytest.mark.parametrize("package", ERAS)
async def test_http_through_a_forwarding_proxy(forward_proxy: Proxy, package: Any) -> None:
    with ServerThread(make_app()) as server:
        assert await one_call(server.url, protocol=package, proxy=forward_proxy.url) == ['{"n": 1}']
        assert await forward_proxy.saw(f"POST 127.0.0.1:{server.port}/mcp")


@pytest.mark.parametrize("package", ERAS)
async def test_https_through_a_proxy_tunnel(forward_proxy: Proxy, pki: Pki, package: Any) -> None:
    """https through a proxy is a CONNECT tunnel, with TLS end to end (the proxy sees no
    request, only the tunnel)."""
    with https_server(pki) as server:
        result = await one_call(server.url, protocol=package, proxy=forward_proxy.url, verify=pki.ca_pem)
        assert result == ['{"n": 1}']
        assert await forward_proxy.saw(f"CONNECT 127.0.0.1:{server.port}")
        assert not any("POST" in line for line in forward_proxy.lines())


async def test_the_proxy_environment_is_honoured(
    forward_proxy: Proxy, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTP_PROXY``/``HTTPS_PROXY`` by default; ``NO_PROXY`` exempts a host;
    ``trust_env=False`` ignores the environment."""
    monkeypatch.setenv("HTTP_PROXY", forward_proxy.url)
    monkeypatch.setenv("HTTPS_PROXY", forward_proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with ServerThread(make_app()) as plain, https_server(pki) as secure:
        assert await one_call(plain.url, protocol=STATELESS) == ['{"n": 1}']
        assert await one_call(secure.url, protocol=STATELESS, verify=pki.ca_pem) == ['{"n": 1}']
        assert await forward_proxy.saw(f"POST 127.0.0.1:{plain.port}/mcp")
        assert await forward_proxy.saw(f"CONNECT 127.0.0.1:{secure.port}")
        seen = len(forward_proxy.lines())
        assert await one_call(plain.url, protocol=STATELESS, trust_env=False) == ['{"n": 1}']
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert await one_call(plain.url, protocol=STATELESS) == ['{"n": 1}']
        # a later call that does go through the proxy (NO_PROXY does not name localhost):
        # once the proxy has logged it, it would have logged the two before it
        marker = plain.url.replace("127.0.0.1", "localhost")
        assert await one_call(marker, protocol=STATELESS) == ['{"n": 1}']
        assert await forward_proxy.saw(f"localhost:{plain.port}")
        later = forward_proxy.lines()[seen:]
        assert later and all(f"localhost:{plain.port}" in line for line in later), later
        assert len(plain.posted("tools/call")) == 4


async def test_an_unreachable_proxy_is_named(pki: Pki) -> None:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{spare.getsockname()[1]}"
    with https_server(pki) as server, pytest.raises(ServerUnreachable, match="proxy"):
        await one_call(server.url, proxy=dead, verify=pki.ca_pem)


# -- cookies: a load balancer that pins sessions -------------------------------------------------


HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


@contextlib.contextmanager
def pinning_balancer(tmp_path: Path, *backends: int) -> Iterator[str]:
    """HAProxy on 127.0.0.1, round robin over ``backends``, pinning a client to one with
    the cookie it inserts (``SERVERID``)."""
    if not os.path.exists(HAPROXY):
        pytest.fail("HAProxy is not installed (apt-get install haproxy; .ci/run does it)")
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    servers = "\n".join(
        f"  server s{i} 127.0.0.1:{backend} cookie s{i}" for i, backend in enumerate(backends)
    )
    config = tmp_path / "haproxy.cfg"
    config.write_text(textwrap.dedent("""\
        global
          maxconn 256
        defaults
          mode http
          timeout connect 5s
          timeout client 60s
          timeout server 60s
        frontend mcp
          bind 127.0.0.1:{port}
          default_backend pool
        backend pool
          balance roundrobin
          cookie SERVERID insert indirect nocache
        """).format(port=port) + servers + "\n")
    process = subprocess.Popen([HAPROXY, "-f", str(config), "-db"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + LIMIT
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline, "HAProxy did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


async def test_a_load_balancer_that_pins_sessions_with_a_cookie(tmp_path: Path) -> None:
    """Two servers with sessions in memory behind HAProxy (round robin, a pinning cookie):
    every request of one client reaches the server that made its session, because the
    client keeps the cookie. Regression: without cookies each request went to the next
    server, which did not know the session (404, a new initialize, every other call)."""
    with (
        ServerThread(make_app()) as one,
        ServerThread(make_app()) as two,
        pinning_balancer(tmp_path, one.port, two.port) as url,
    ):
        async with connect_http(url, protocol=HANDSHAKE) as client:
            for n in range(6):
                result = await asyncio.wait_for(client.call_tool(name="echo", arguments={"n": n}), LIMIT)
                assert texts(result) == [f'{{"n": {n}}}']
        initializes = len(one.posted("initialize")) + len(two.posted("initialize"))
        calls = (len(one.posted("tools/call")), len(two.posted("tools/call")))
    assert initializes == 1
    assert sorted(calls) == [0, 6]
    assert [e["status"] for e in one.log + two.log if e["method"] == "POST"].count(404) == 0


# -- redirects ----------------------------------------------------------------------------------


class Redirecting:
    """Answers requests to ``/old`` with ``status`` to ``location``; the rest goes to ``app``."""

    def __init__(self, app: Any, status: int, location: str) -> None:
        self.app, self.status, self.location = app, status, location

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/old":
            await send({"type": "http.response.start", "status": self.status,
                        "headers": [(b"location", self.location.encode()), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


@pytest.mark.parametrize("package", ERAS)
async def test_a_same_origin_307_is_followed(package: Any) -> None:
    with ServerThread(Redirecting(make_app(), 307, "/mcp")) as server:
        old = server.url.removesuffix("/mcp") + "/old"
        assert await one_call(old, protocol=package, bearer_token="t") == ['{"n": 1}']
        posts = server.posted("tools/call")
        assert posts and posts[0]["headers"]["authorization"] == "Bearer t"


async def test_a_redirect_to_another_origin_is_not_followed_and_credentials_stay() -> None:
    """Regression guard for issue 10 item 6: the Authorization header (and the session
    id, and cookies) never follow a redirect to another origin: the client stops with an
    error naming the location, and the other origin sees nothing."""
    with ServerThread(make_app()) as elsewhere:
        with ServerThread(Redirecting(make_app(), 307, elsewhere.url)) as server:
            old = server.url.removesuffix("/mcp") + "/old"
            with pytest.raises(RedirectNotFollowed) as raised:
                await one_call(old, protocol=STATELESS, bearer_token="secret")
        assert elsewhere.log == []
    assert elsewhere.url in str(raised.value) and "another origin" in str(raised.value)


async def test_a_302_to_a_post_is_not_followed() -> None:
    """A 301/302/303 would turn the POST into a GET: named instead of followed."""
    with ServerThread(Redirecting(make_app(), 302, "/mcp")) as server:
        old = server.url.removesuffix("/mcp") + "/old"
        with pytest.raises(RedirectNotFollowed, match="307 and 308"):
            await one_call(old, protocol=STATELESS)
        assert server.posted("tools/call") == []


# -- time limits ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def silent_server(*, head: bytes | None = None) -> AsyncIterator[str]:
    """A TCP server on 127.0.0.1 that reads and never answers (or sends ``head`` and then
    nothing: a reply that starts and goes quiet)."""
    held: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
            if head is not None:
                writer.write(head)
                await writer.drain()
            await reader.read()  # until the client hangs up

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
    finally:
        server.close()
        for writer in held:
            writer.close()
        await server.wait_closed()


async def test_a_server_that_never_answers_fails_within_the_reply_limit() -> None:
    async with silent_server() as url:
        started = time.monotonic()
        with pytest.raises(ResponseLost, match=r"nothing came from the server for 0\.5 s"):
            await one_call(url, protocol=STATELESS, timeouts=HttpTimeouts(reply=0.5))
        assert time.monotonic() - started < 10


async def test_a_stream_that_goes_quiet_fails_within_the_idle_limit() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    async with silent_server(head=head) as url:
        started = time.monotonic()
        with pytest.raises(ResponseLost, match=r"nothing came from the server for 0\.5 s") as raised:
            await one_call(url, protocol=STATELESS, timeouts=HttpTimeouts(idle=0.5))
        assert time.monotonic() - started < 10
    assert url in str(raised.value)


async def test_a_tls_handshake_that_never_completes_fails_within_the_connect_limit(pki: Pki) -> None:
    async with silent_server() as url:
        started = time.monotonic()
        with pytest.raises(ServerUnreachable, match=r"within 0\.5 s"):
            await one_call(url.replace("http://", "https://"), verify=pki.ca_pem,
                           timeouts=HttpTimeouts(connect=0.5))
        assert time.monotonic() - started < 10


# -- bring your own session ---------------------------------------------------------------------


@pytest.mark.parametrize("package", ERAS)
async def test_a_session_of_your_own_is_used_and_left_open(package: Any, pki: Pki) -> None:
    """The user's aiohttp session, configured with its own trust, headers and trace hooks,
    carries every request, and is still open (and usable) after the client is done."""
    sent: list[str] = []

    async def on_request_start(session: Any, context: Any, params: Any) -> None:
        sent.append(params.method)

    tracing = aiohttp.TraceConfig()
    tracing.on_request_start.append(on_request_start)
    with https_server(pki) as server:
        connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=pki.ca_pem))
        async with aiohttp.ClientSession(
            connector=connector, headers={"X-Team": "blue"}, trace_configs=[tracing]
        ) as own:
            assert await one_call(server.url, protocol=package, http_session=own) == ['{"n": 1}']
            assert not own.closed
            async with own.get(server.url.removesuffix("/mcp") + "/elsewhere") as response:
                assert response.status == 404
        assert "POST" in sent
        assert {e["headers"].get("x-team") for e in server.log} == {"blue"}
    with pytest.raises(ValueError, match="http_session"):
        await one_call(server.url, http_session=own, verify=pki.ca_pem)


def marked(params: Any) -> bool:
    """Whether a notification's params carry the test's ``_meta`` marker."""
    return bool(params is not None and (params.meta or {}).get("marker") == "last")


async def test_a_quiet_get_stream_is_opened_again_after_the_idle_limit() -> None:
    """The handshake era's GET stream carries nothing for a while: past the idle limit it
    is opened again (not ended, not an error), from its last event id, so server messages
    sent meanwhile still arrive, each once."""
    app = make_app()
    seen: list[Any] = []

    class Handlers(mcp_generated.v2025_11_25.client.ClientHandlers):  # type: ignore[misc, name-defined]
        async def on_tool_list_changed(self, params: Any, ctx: Any) -> None:
            seen.append(params)

    with ServerThread(app) as server:
        async with connect_http(
            server.url, protocol=HANDSHAKE, handlers=Handlers(), timeouts=HttpTimeouts(idle=0.3)
        ) as client:
            client.session.transport.retry_ms = 50
            deadline = time.monotonic() + LIMIT
            while len(server.requests("GET")) < 3:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            session = app.sessions[client.session.transport.session_id]
            for _ in range(5):  # some of them while the stream is being opened again
                await server.call(session.server.peer.send_tool_list_changed())
                await asyncio.sleep(0.1)
            while not any("last-event-id" in e["headers"] for e in server.requests("GET")):
                assert time.monotonic() < deadline, "the GET stream was not opened again from an event id"
                await asyncio.sleep(0.02)
            # a later one, marked: once it came, a second copy of any before it would have
            await server.call(session.server.peer.send_tool_list_changed(meta={"marker": "last"}))
            while not any(marked(params) for params in seen):
                assert time.monotonic() < deadline, f"{len(seen)} of 6 notifications came"
                await asyncio.sleep(0.02)
            assert [marked(params) for params in seen] == [False] * 5 + [True]  # none twice either
        resumed = [e for e in server.requests("GET") if "last-event-id" in e["headers"]]
        assert resumed


def test_aiohttp_is_imported_only_when_a_program_speaks_http() -> None:
    """A stdio-only program (and the cold start it measures) never pays for aiohttp's
    import: the face, the client and OAuth modules load it at the first HTTP connection."""
    code = (
        "import sys\n"
        "from typedmcp import connect_stdio, connect_http, connect_sse, run_stdio, http_app\n"
        "import typedmcp.auth.oauth, typedmcp.transports.http_client\n"
        "print('aiohttp' in sys.modules)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "False"


@pytest.mark.parametrize(
    "error",
    [
        aiohttp.ServerDisconnectedError(),
        aiohttp.ClientOSError(errno.ECONNRESET, "Connection reset by peer"),
        ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
    ],
    ids=["closed", "reset (aiohttp)", "reset"],
)
def test_a_first_https_request_cut_without_a_client_certificate_names_cert(error: Exception) -> None:
    """A server refusing a missing client certificate (TLS 1.3: after the handshake) may
    close the connection or reset it, whichever the timing gives; both name ``cert=``.
    Regression: a reset (seen under load in CI) became a bare ResponseLost."""
    from yarl import URL

    from typedmcp.transports.http_aiohttp import HttpClient

    client = HttpClient("https://127.0.0.1:8443/mcp")
    failure = client._failure(error, URL(client.url))
    assert isinstance(failure, TlsError), failure
    assert "127.0.0.1:8443" in str(failure) and "cert=" in str(failure)


class ResettingProxy:
    """A TCP proxy on 127.0.0.1 in front of ``upstream`` (TLS passes through untouched):
    once :attr:`armed`, the next bytes a client sends on any connection get that
    connection reset (a TCP RST to the client) instead of forwarded."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.armed = False
        self.connections = 0
        self.resets = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> ResettingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"https://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/mcp"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)

        async def upload() -> None:
            while chunk := await reader.read(65536):
                if self.armed:
                    self.resets += 1
                    writer.get_extra_info("socket").setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    writer.transport.abort()  # (linger 0: an RST, not a FIN)
                    return
                up_writer.write(chunk)
                await up_writer.drain()

        async def download() -> None:
            while chunk := await up_reader.read(65536):
                writer.write(chunk)
                await writer.drain()

        pumps = [asyncio.ensure_future(upload()), asyncio.ensure_future(download())]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for side in (writer, up_writer):
                side.close()
            self._tasks.discard(task)


async def test_a_later_https_request_reset_without_a_client_certificate_does_not_name_cert(pki: Pki) -> None:
    """The mutual-TLS hint is for the first request only (a server refusing a missing
    client certificate cuts that one): once the server has answered, a reset is a lost
    response, never a TlsError naming ``cert=``."""
    with https_server(pki) as server:
        async with ResettingProxy(server.port) as proxy, connect_http(
            proxy.url, protocol=STATELESS, verify=pki.ca_pem, request_timeout=LIMIT
        ) as client:
            first = await asyncio.wait_for(client.call_tool(name="echo", arguments={"n": 1}), LIMIT)
            assert texts(first) == ['{"n": 1}']
            proxy.armed = True
            with pytest.raises(ResponseLost) as raised:
                await asyncio.wait_for(client.call_tool(name="echo", arguments={"n": 2}), LIMIT)
            assert proxy.resets == 1 and proxy.connections == 1  # the answered connection
    assert not isinstance(raised.value, TlsError)
    assert "reset" in str(raised.value) and "cert=" not in str(raised.value)


@pytest.mark.parametrize(
    ("origin", "location", "followed"),
    [
        ("http://a.example/mcp", "https://a.example/mcp", True),  # the https upgrade
        ("http://a.example/mcp", "https://b.example/mcp", False),  # another host
        ("https://a.example/mcp", "http://a.example/mcp", False),  # a downgrade
        ("http://a.example:8080/mcp", "https://a.example/mcp", False),  # not default ports
        ("http://a.example/mcp", "https://a.example:8443/mcp", False),
        ("http://a.example:8080/mcp", "http://a.example:8080/other", True),  # same origin
    ],
)
def test_a_redirect_is_same_origin_or_the_https_upgrade_of_the_same_host(
    origin: str, location: str, followed: bool
) -> None:
    """Credentials follow a redirect only to the same origin, or from http to https on the
    same host with default ports; never a downgrade, another host or another port."""
    from yarl import URL

    from typedmcp.transports.http_aiohttp import _same_origin

    assert _same_origin(URL(origin), URL(location)) is followed


def _alert(reason: str) -> ssl.SSLError:
    error = ssl.SSLError(1, f"[SSL: {reason}] ({reason.lower()})")
    error.reason = reason  # what OpenSSL fills in
    return error


def test_a_tls_alert_is_found_down_the_cause_chain_of_a_connection_error() -> None:
    """A server refusing the client certificate after the handshake (TLS 1.3) shows as an
    alert somewhere under aiohttp's error: as its cause or its context, up to 4 links
    down; a TLS error that is not an alert, or no TLS error, is no refusal."""
    from typedmcp.transports.http_aiohttp import _tls_refusal

    alert = _alert("TLSV13_ALERT_CERTIFICATE_REQUIRED")
    assert _tls_refusal(alert) == "tlsv13 alert certificate required"
    caused = aiohttp.ClientOSError(errno.ECONNRESET, "reset")
    caused.__cause__ = alert
    assert _tls_refusal(caused) == "tlsv13 alert certificate required"
    in_context = aiohttp.ClientOSError(errno.ECONNRESET, "reset")
    in_context.__context__ = alert
    assert _tls_refusal(in_context) == "tlsv13 alert certificate required"
    chain: BaseException = alert
    for depth in range(1, 5):
        outer = OSError(f"link {depth}")
        outer.__cause__ = chain
        chain = outer
        assert (_tls_refusal(chain) is not None) is (depth < 4), depth
    assert _tls_refusal(_alert("CERTIFICATE_VERIFY_FAILED")) is None
    assert _tls_refusal(aiohttp.ServerDisconnectedError()) is None


@pytest.mark.parametrize(
    ("error", "closed_or_reset"),
    [
        (aiohttp.ServerDisconnectedError(), True),
        (ConnectionResetError(errno.ECONNRESET, "reset"), True),
        (aiohttp.ClientOSError(errno.ECONNRESET, "reset"), True),
        (aiohttp.ClientOSError(errno.ETIMEDOUT, "timed out"), False),
        (OSError(errno.EHOSTUNREACH, "no route"), False),
    ],
)
def test_only_a_close_or_a_reset_counts_as_one(error: Exception, closed_or_reset: bool) -> None:
    """What may be a refused client certificate (and gets the cert= hint) is a close or a
    reset only, not any aiohttp OS error."""
    from typedmcp.transports.http_aiohttp import _closed_or_reset

    assert _closed_or_reset(error) is closed_or_reset
