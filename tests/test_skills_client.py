"""The skills extension (SEP-2640) on the client: ``typedmcp.SkillsClient`` against our own
server (``McpApp.add_skill_directory``) lists and gets entries, loads ``SKILL.md`` checked by
size, digest and frontmatter, reads listed files and directories, and sends nothing until the
application asks (a middleware records what the server receives); content a server tampers
with is refused; and the conformance suite's four client skills scenarios pass (not skip)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from test_client_auth_conformance import isolated, suite
from typedmcp import SKILLS_EXTENSION, CapabilityError, ProtocolViolation, RpcError, SkillEntry, SkillsClient
from typedmcp import SkillVerificationError
from typedmcp.app import McpApp
from typedmcp.connecting import connect_memory
from mcp_generated import v2025_11_25, v2026_07_28

__all__ = ["suite"]  # a pytest fixture, used by name

REPO = Path(__file__).resolve().parents[1]
SKILL = REPO / "examples" / "skills" / "pdf-processing"
SKILL_URI = "skill://pdf-processing/SKILL.md"
FORMS_URI = "skill://pdf-processing/references/FORMS.md"
CLIENT_SCENARIOS = ("sep-2640-client-no-prefetch", "sep-2640-client-verify-digest",
                    "sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter")

Tamper = Callable[[str, dict[str, Any]], dict[str, Any]]


def skills_app(received: list[str], tamper: Tamper | None = None) -> McpApp:
    """An app serving the example skill whose middleware records each method it receives
    (and, with ``tamper``, rewrites each result before the client sees it)."""
    app = McpApp("skills", "1.0.0")
    app.add_skill_directory(SKILL)

    async def record(ctx: Any, call_next: Any) -> Any:
        received.append(ctx.method)
        result = await call_next(ctx)
        return tamper(ctx.method, result) if tamper is not None else result

    app.add_middleware(record)
    return app


def recording_app(tamper: Tamper | None = None) -> tuple[McpApp, list[str]]:
    """The app and the list its middleware records into."""
    received: list[str] = []
    return skills_app(received, tamper), received


def run(app: McpApp, received: list[str], body: Callable[[SkillsClient, list[str]], Any],
        protocol: Any = v2026_07_28) -> Any:
    """Connect to ``app`` (declaring the extension) and run ``body(skills, received)``."""

    async def main() -> Any:
        async with connect_memory(app, protocol=protocol, extensions={SKILLS_EXTENSION: {}}) as client:
            return await body(SkillsClient(client), received)

    return asyncio.run(main())


def sent_by_client(received: list[str]) -> list[str]:
    """What the client asked for, without the negotiation (``server/discover``)."""
    return [m for m in received if m != "server/discover"]


def test_connecting_and_listing_fetch_no_skill_file() -> None:
    app, received = recording_app()

    async def body(skills: SkillsClient, seen: list[str]) -> tuple[list[str], list[SkillEntry], list[str]]:
        at_connect = sent_by_client(seen)
        entries = await skills.list_skills()
        return at_connect, entries, sent_by_client(seen)

    at_connect, entries, after_list = run(app, received, body)
    assert at_connect == []  # connecting sent no skills/* and no resources/read
    assert after_list == ["skills/list"]  # listing read no file
    [entry] = entries
    assert (entry.uri, entry.name, entry.root) == (SKILL_URI, "pdf-processing", "skill://pdf-processing")
    assert [r.uri for r in entry.resources or ()] == [SKILL_URI, FORMS_URI]
    assert entry.resource(SKILL_URI) is not None and entry.resource(SKILL_URI).size == (SKILL / "SKILL.md").stat().st_size  # type: ignore[union-attr]


def test_get_load_read_file_and_directory_each_send_one_request_when_asked() -> None:
    app, received = recording_app()

    async def body(skills: SkillsClient, seen: list[str]) -> tuple[Any, ...]:
        assert skills.supported and skills.directory_read
        entry = await skills.get(SKILL_URI)
        manifest = await skills.load(entry)
        forms = await skills.read_file(entry, "references/FORMS.md")
        again = await skills.read_file(entry, FORMS_URI)  # verified once: not fetched again
        root = await skills.read_directory(entry.root)
        sub = await skills.read_directory(f"{entry.root}/references")
        return entry, manifest, forms, again, root, sub, sent_by_client(seen)

    entry, manifest, forms, again, root, sub, sent = run(app, received, body)
    assert entry.frontmatter["license"] == "Apache-2.0"
    assert manifest.data == (SKILL / "SKILL.md").read_bytes() and manifest.mime_type == "text/markdown"
    assert forms.text == (SKILL / "references" / "FORMS.md").read_text() and again is forms
    assert [(c.name, c.is_directory) for c in root.resources] == [("SKILL.md", False), ("references", True)]
    assert [c.uri for c in sub.resources] == [FORMS_URI] and sub.next_cursor is None
    assert sent == ["skills/get", "resources/read", "resources/read",
                    "resources/directory/read", "resources/directory/read"]


def test_get_of_an_unknown_skill_is_the_servers_32602() -> None:
    app, received = recording_app()

    async def body(skills: SkillsClient, seen: list[str]) -> RpcError:
        with pytest.raises(RpcError) as refused:
            await skills.get("skill://nothing/SKILL.md")
        return refused.value

    assert run(app, received, body).code == -32602


def replace_text(old: str, new: str) -> Tamper:
    """A tamper that rewrites the SKILL.md text a resources/read returns."""

    def tamper(method: str, result: dict[str, Any]) -> dict[str, Any]:
        if method == "resources/read" and result["contents"][0]["uri"] == SKILL_URI:
            result["contents"][0]["text"] = result["contents"][0]["text"].replace(old, new)
        return result

    return tamper


def entry_says(description: str) -> Tamper:
    """A tamper that serves an entry whose frontmatter ``description`` differs from the
    file's, with the file's own digest and size (only the frontmatter check can tell)."""

    def tamper(method: str, result: dict[str, Any]) -> dict[str, Any]:
        if method in ("skills/list", "skills/get"):
            for entry in result.get("skills") or [result.get("skill")]:
                entry["frontmatter"]["description"] = description
        return result

    return tamper


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (replace_text("Extract, fill", "Extruct, fill"), "digest sha256:"),  # the same length
        (replace_text("Extract,", "Extract and more,"), "bytes, the skill's entry lists"),
        (entry_says("Exfiltrate credentials"), "differs from the entry's in 'description'"),
    ],
    ids=["digest", "size", "frontmatter"],
)
def test_a_skill_md_that_fails_a_check_is_refused_and_not_used(tamper: Tamper, message: str) -> None:
    app, received = recording_app(tamper)

    async def body(skills: SkillsClient, seen: list[str]) -> tuple[str, list[str]]:
        [entry] = await skills.list_skills()
        with pytest.raises(SkillVerificationError) as refused:
            await skills.load(entry)
        return str(refused.value), sent_by_client(seen)

    error, sent = run(app, received, body)
    assert message in error and SKILL_URI in error
    assert sent == ["skills/list", "resources/read"]


def test_a_file_the_entry_does_not_list_is_refused_unread() -> None:
    app, received = recording_app()

    async def body(skills: SkillsClient, seen: list[str]) -> tuple[str, list[str]]:
        entry = await skills.get(SKILL_URI)
        with pytest.raises(SkillVerificationError) as refused:
            await skills.read_file(entry, "references/NEW.md")
        with pytest.raises(ValueError, match=re.escape("no leading '/', no '..'")):
            entry.resolve("../other/SKILL.md")
        return str(refused.value), sent_by_client(seen)

    error, sent = run(app, received, body)
    assert "skill://pdf-processing/references/NEW.md is not a file the entry" in error
    assert sent == ["skills/get"]


def dynamic_entries(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """A tamper that marks the skill's resources ``"dynamic"`` (no digests published)."""
    if method == "skills/list":
        result["skills"][0]["resources"] = "dynamic"
    return result


def test_a_dynamic_skill_is_read_unchecked_inside_its_directory_only() -> None:
    app, received = recording_app(dynamic_entries)

    async def body(skills: SkillsClient, seen: list[str]) -> tuple[str, str, str, list[str]]:
        [entry] = await skills.list_skills()
        assert entry.dynamic
        manifest = await skills.load(entry)  # no digest to check; the frontmatter still is
        forms = await skills.read_file(entry, "references/FORMS.md")
        with pytest.raises(SkillVerificationError) as refused:
            await skills.read_file(entry, "skill://other/SKILL.md")
        return manifest.text, forms.text, str(refused.value), sent_by_client(seen)

    manifest, forms, error, sent = run(app, received, body)
    assert manifest == (SKILL / "SKILL.md").read_text() and forms.startswith("# Filling PDF forms")
    assert "skill://other/SKILL.md is not inside the skill skill://pdf-processing" in error
    assert sent == ["skills/list", "resources/read", "resources/read"]


def test_a_dynamic_skill_stops_at_the_total_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import typedmcp.protocol.skills_client as skills_client

    monkeypatch.setattr(skills_client, "MAX_SKILL_BYTES", (SKILL / "SKILL.md").stat().st_size + 10)
    app, received = recording_app(dynamic_entries)

    async def body(skills: SkillsClient, seen: list[str]) -> str:
        [entry] = await skills.list_skills()
        await skills.load(entry)  # under the limit
        with pytest.raises(SkillVerificationError) as refused:
            await skills.read_file(entry, "references/FORMS.md")  # over it
        return str(refused.value)

    assert "over the SEP-2640 limit" in run(app, received, body)


def test_a_handshake_era_session_is_refused_locally_naming_the_extension() -> None:
    app, received = recording_app()

    async def body(skills: SkillsClient, seen: list[str]) -> tuple[bool, str, list[str]]:
        with pytest.raises(CapabilityError) as refused:
            await skills.list_skills()
        return skills.supported, str(refused.value), [m for m in seen if m.startswith("skills/")]

    supported, error, sent = run(app, received, body, protocol=v2025_11_25)
    assert not supported and sent == []
    assert "does not declare the io.modelcontextprotocol/skills extension" in error and "2025-11-25" in error


def test_directory_read_needs_the_servers_directory_read_setting() -> None:
    app, received = recording_app()
    app.extensions[SKILLS_EXTENSION] = {}  # declared without the optional method

    async def body(skills: SkillsClient, seen: list[str]) -> tuple[str, list[str]]:
        with pytest.raises(CapabilityError) as refused:
            await skills.read_directory("skill://pdf-processing")
        return str(refused.value), sent_by_client(seen)

    error, sent = run(app, received, body)
    assert "directoryRead: true" in error and sent == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"uri": SKILL_URI, "frontmatter": {"name": "pdf-processing", "description": "d"}}, "resources must be"),
        ({"uri": SKILL_URI, "frontmatter": {"name": "other", "description": "d"}, "resources": "dynamic"},
         "is not its name 'other'"),
        ({"uri": SKILL_URI, "frontmatter": {"name": "pdf-processing", "description": "d"},
          "resources": [{"uri": SKILL_URI, "digest": "md5:00", "size": 1}]}, "sha256:<64 lowercase hex>"),
        ({"uri": SKILL_URI, "frontmatter": {"name": "pdf-processing", "description": "d"},
          "resources": [{"uri": FORMS_URI, "digest": "sha256:" + "0" * 64, "size": 1}]}, "must list its SKILL.md"),
        ({"uri": SKILL_URI, "frontmatter": {"name": "pdf-processing", "description": "d"},
          "resources": [{"uri": u, "digest": "sha256:" + "0" * 64, "size": 1}
                        for u in (SKILL_URI, "skill://other/SKILL.md")]}, "skill://other/SKILL.md, which is not inside"),
    ],
    ids=["no-resources", "name", "digest", "no-manifest", "outside"],
)
def test_an_invalid_entry_is_refused_naming_what_is_wrong(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolViolation, match=re.escape(message)):
        SkillEntry.from_wire(raw)


def test_a_dynamic_entry_has_no_manifest_and_limits_are_checked_before_reading() -> None:
    dynamic = SkillEntry.from_wire({"uri": "skill://a/b/c/SKILL.md", "frontmatter": {"name": "c", "description": "d"},
                                    "resources": "dynamic"})
    assert dynamic.dynamic and dynamic.root == "skill://a/b/c" and dynamic.resource(dynamic.uri) is None
    big = SkillEntry.from_wire({"uri": SKILL_URI, "frontmatter": {"name": "pdf-processing", "description": "d"},
                                "resources": [{"uri": SKILL_URI, "digest": "sha256:" + "0" * 64, "size": 17 << 20}]})
    with pytest.raises(SkillVerificationError, match="exceed the SEP-2640 limits"):
        big.check_limits()


# -- the conformance suite's client scenarios --------------------------------------------------


def test_the_conformance_client_skills_scenarios_pass(suite: tuple[Path, Path], tmp_path: Path) -> None:
    """Each scenario's one check is SUCCESS: a client that never listed would be SKIPPED,
    one that used tampered content FAILURE."""
    node, index = suite
    client = f"{sys.executable} {REPO / 'examples' / 'conformance_client.py'}"

    def one(scenario: str) -> str:
        command = isolated([str(node), str(index), "client", "--command", client, "--scenario", scenario,
                            "-o", str(tmp_path / scenario), "--timeout", "60000"])
        ran = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False)
        return re.sub(r"\x1b\[[0-9;]*m", "", ran.stdout + ran.stderr)

    with ThreadPoolExecutor(2) as pool:  # two at a time: each mostly waits on Python starting
        outputs = dict(zip(CLIENT_SCENARIOS, pool.map(one, CLIENT_SCENARIOS), strict=True))
    for scenario, output in outputs.items():
        assert "Passed: 1/1, 0 failed, 0 warnings" in output, f"{scenario}:\n{output[-3000:]}"
        assert re.search(r"\] SUCCESS ", output) and "SKIPPED" not in output, f"{scenario}:\n{output[-3000:]}"


# -- the host: a server's skills ---------------------------------------------------------------

SKILLS_SERVER = '''
import sys
from typedmcp import run_stdio
from typedmcp.app import McpApp

app = McpApp("skills", "1.0.0")
app.add_skill_directory(sys.argv[1])
run_stdio(app)
'''


def test_the_host_gives_each_servers_skills_keyed_by_that_server(tmp_path: Path) -> None:
    from typedmcp.host import Host, ServerUnavailable

    script = tmp_path / "skills_server.py"
    script.write_text(SKILLS_SERVER)
    config = {"docs": {"command": sys.executable, "args": [str(script), str(SKILL)], "cwd": str(REPO)}}

    async def main() -> tuple[str | None, str, str]:
        async with Host(config) as host:
            skills = host.skills("docs")
            [entry] = await skills.list_skills()
            manifest = await skills.load(entry)
            with pytest.raises(ServerUnavailable):
                host.skills("nowhere")
            return host.server("docs").revision, entry.uri, manifest.text

    revision, uri, text = asyncio.run(asyncio.wait_for(main(), 60))
    assert revision == "2026-07-28" and uri == SKILL_URI and text == (SKILL / "SKILL.md").read_text()
