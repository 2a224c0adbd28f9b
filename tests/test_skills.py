"""The skills extension (SEP-2640) on the server: ``McpApp.add_skill_directory`` and the
hand-written fixture's ``skill_catalog`` answer ``skills/list`` (paginated, atomic entries,
digests), ``skills/get`` and ``resources/directory/read`` in 2026-07-28; a handshake-era
client sees no extension but reads the skill's files as resources; bad skill folders are
refused with a message naming the fix; and the conformance suite's three skills scenarios
pass against both fixtures."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from test_client_auth_conformance import suite
from test_stateless_server import anyio_backend, app, assert_error, handlers, post, request
from typedmcp import SKILLS_EXTENSION, RpcError, SkillCatalog, SkillError, http_app, load_skill
from typedmcp.app import McpApp
from typedmcp.app.signature import DeclarationError
from typedmcp.connecting import connect_memory
from mcp_generated import v2025_11_25, v2026_07_28

__all__ = ["anyio_backend", "app", "handlers", "suite"]  # pytest fixtures, used by name

REPO = Path(__file__).resolve().parents[1]
SKILL = REPO / "examples" / "skills" / "pdf-processing"
SKILL_URI = "skill://pdf-processing/SKILL.md"
FORMS_URI = "skill://pdf-processing/references/FORMS.md"
SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def write_skill(root: Path, name: str, frontmatter: str | None = None, files: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    head = frontmatter if frontmatter is not None else f"name: {name}\ndescription: The {name} skill"
    (folder / "SKILL.md").write_text(f"---\n{head}\n---\n\nBody of {name}.\n")
    for relative, text in (files or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


async def answer(asgi: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    reply = await post(asgi, request(1, method, params))
    assert reply.status == 200, reply.received
    result: dict[str, Any] = reply.json()["result"]
    return result


# -- the hand-written fixture over HTTP, 2026-07-28 --------------------------------------------

pytestmark = pytest.mark.anyio


async def test_skills_list_entry_has_uri_frontmatter_and_every_file_with_digest_and_size(app: Any) -> None:
    result = await answer(app, "skills/list")
    assert set(result) == {"skills", "resultType", "ttlMs", "cacheScope", "_meta"}
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == ("complete", 0, "private")
    assert result["skills"] == [{
        "uri": SKILL_URI,
        "frontmatter": {
            "name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
            "license": "Apache-2.0", "metadata": {"author": "mcp-codegen examples", "version": "1.0"},
        },
        "resources": [
            {"uri": SKILL_URI, "digest": digest(SKILL / "SKILL.md"), "size": (SKILL / "SKILL.md").stat().st_size},
            {"uri": FORMS_URI, "digest": digest(SKILL / "references" / "FORMS.md"),
             "size": (SKILL / "references" / "FORMS.md").stat().st_size},
        ],
    }]


async def test_skills_get_returns_the_entry_without_a_cursor_and_32602_for_an_unknown_uri(app: Any) -> None:
    listed = (await answer(app, "skills/list"))["skills"][0]
    got = await answer(app, "skills/get", {"uri": SKILL_URI})
    assert got["skill"] == listed and "nextCursor" not in got and got["ttlMs"] == 0
    unknown = assert_error(await post(app, request(2, "skills/get", {"uri": "skill://nope/SKILL.md"})), 200, 2, -32602)
    assert "'skill://nope/SKILL.md' is not a skill this server serves" in unknown["message"]


async def test_directory_read_lists_direct_children_with_subdirectories_as_inode_directory(app: Any) -> None:
    root = await answer(app, "resources/directory/read", {"uri": "skill://pdf-processing"})
    assert root["resources"] == [
        {"uri": SKILL_URI, "name": "SKILL.md", "mimeType": "text/markdown", "size": (SKILL / "SKILL.md").stat().st_size},
        {"uri": "skill://pdf-processing/references", "name": "references", "mimeType": "inode/directory"},
    ]
    sub = await answer(app, "resources/directory/read", {"uri": "skill://pdf-processing/references"})
    assert [child["uri"] for child in sub["resources"]] == [FORMS_URI]
    for not_a_directory in (SKILL_URI, "skill://pdf-processing/missing", "test://static-text"):
        error = assert_error(
            await post(app, request(3, "resources/directory/read", {"uri": not_a_directory})), 200, 3, -32602)
        assert "is not a directory this server serves" in error["message"]


async def test_skill_files_are_read_through_resources_read_with_the_listed_bytes(app: Any) -> None:
    read = await answer(app, "resources/read", {"uri": SKILL_URI})
    contents = read["contents"][0]
    assert contents["mimeType"] == "text/markdown"
    assert "sha256:" + hashlib.sha256(contents["text"].encode()).hexdigest() == digest(SKILL / "SKILL.md")


# -- McpApp.add_skill_directory ----------------------------------------------------------------


def skill_app(tmp_path: Path, count: int, page_size: int = 2) -> McpApp:
    typed = McpApp("skills", "1.0.0")
    for index in range(count):
        typed.add_skill_directory(write_skill(tmp_path, f"skill-{index}", files={"docs/a.txt": "a", "docs/b/c.txt": "c"}))
    assert typed.skill_catalog is not None
    typed.skill_catalog.page_size = page_size
    return typed


async def test_pagination_returns_every_entry_once_and_whole(tmp_path: Path) -> None:
    asgi = http_app(skill_app(tmp_path, 5))
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        result = await answer(asgi, "skills/list", {"cursor": cursor} if cursor else {})
        pages.append(result["skills"])
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert [len(page) for page in pages] == [2, 2, 1]
    entries = [entry for page in pages for entry in page]
    assert [e["uri"] for e in entries] == [f"skill://skill-{i}/SKILL.md" for i in range(5)]
    assert all(len(e["resources"]) == 3 for e in entries)  # SKILL.md, docs/a.txt, docs/b/c.txt
    bad = assert_error(await post(asgi, request(4, "skills/list", {"cursor": "zz"})), 200, 4, -32602)
    assert "cursor 'zz' is not one this server gave out" in bad["message"]


async def test_the_app_declares_the_extension_with_directory_read_and_lists_skill_md_from_its_frontmatter(
    tmp_path: Path,
) -> None:
    typed = skill_app(tmp_path, 1)
    asgi = http_app(typed)
    discovered = await answer(asgi, "server/discover")
    assert discovered["capabilities"]["extensions"] == {SKILLS_EXTENSION: {"directoryRead": True}}
    assert "resources" in discovered["capabilities"]
    listed = {r["uri"]: r for r in (await answer(asgi, "resources/list"))["resources"]}
    assert listed["skill://skill-0/SKILL.md"]["name"] == "skill-0"
    assert listed["skill://skill-0/SKILL.md"]["description"] == "The skill-0 skill"
    assert listed["skill://skill-0/SKILL.md"]["mimeType"] == "text/markdown"
    assert set(listed) == {"skill://skill-0/SKILL.md", "skill://skill-0/docs/a.txt", "skill://skill-0/docs/b/c.txt"}


def test_a_handshake_era_client_sees_no_extension_but_reads_the_files(tmp_path: Path) -> None:
    """Extensions are on the wire from 2026-07-28: a 2025-11-25 session has no
    ``capabilities.extensions`` and no skills/* methods; the files stay resources."""
    typed = skill_app(tmp_path, 1)

    async def run() -> tuple[dict[str, Any], list[str], str, str]:
        async with connect_memory(typed, protocol=v2025_11_25) as client:
            listed = await client.list_resources()
            read = await client.read_resource(uri="skill://skill-0/docs/a.txt")
            assert client.session.engine is not None
            with pytest.raises(RpcError) as refused:  # the raw request: no typed stub has it
                await client.session.engine.request("skills/list", {})
            return (dict(client.session.peer_capabilities), [r.uri for r in listed.resources],
                    read.contents[0].text, refused.value.message)

    capabilities, uris, text, refusal = asyncio.run(run())
    assert "extensions" not in capabilities
    assert "skill://skill-0/SKILL.md" in uris and text == "a"
    assert refusal == "Method not found: skills/list"


def test_a_2026_client_reads_the_extension_declaration(tmp_path: Path) -> None:
    async def run() -> bool:
        async with connect_memory(skill_app(tmp_path, 1), protocol=v2026_07_28) as client:
            return client.session.peer_extension(SKILLS_EXTENSION) == {"directoryRead": True}

    assert asyncio.run(run())


# -- bad skill folders -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frontmatter", "message"),
    [
        ("name: demo", "the frontmatter needs a non-empty 'description'"),
        ("name: demo\ndescription: d\nversion: 1.0", "YAML reads '1.0' as a number, boolean or null"),
        ("name: demo\ndescription: [a, b]", "needs YAML this parser does not read"),
        ("name: demo\ndescription: d\nname: again", "'name' is given twice"),
        ("name: Demo\ndescription: d", "breaks the naming rules"),
        ("name: other\ndescription: d", "rename it to the skill's name 'other'"),
    ],
)
def test_a_bad_skill_md_is_refused_naming_what_to_fix(tmp_path: Path, frontmatter: str, message: str) -> None:
    folder = write_skill(tmp_path, "demo", frontmatter)
    with pytest.raises(SkillError, match=re.escape(message)):
        load_skill(folder)
    with pytest.raises(DeclarationError, match=re.escape(message)):
        McpApp("x").add_skill_directory(folder)


def test_a_folder_without_skill_md_and_the_sep_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillError, match=re.escape("a skill folder holds a SKILL.md")):
        load_skill(tmp_path / "empty")
    many = write_skill(tmp_path, "many", files={f"f{i}.txt": "x" for i in range(512)})
    with pytest.raises(SkillError, match="513 files; a skill has at most 512"):
        load_skill(many)
    monkeypatch.setattr("typedmcp.protocol.skills.MAX_SKILL_BYTES", 100)
    big = write_skill(tmp_path, "big", files={"big.txt": "x" * 200})
    with pytest.raises(SkillError, match="bytes; a skill holds at most 100"):
        load_skill(big)
    with pytest.raises(SkillError, match="two skills are named 'many'"):
        SkillCatalog([load_skill(write_skill(tmp_path / "a", "many")), load_skill(write_skill(tmp_path / "b", "many"))])


def test_served_bytes_match_the_digest_after_an_edit_and_links_outside_are_refused(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "demo", files={"a.txt": "before"})
    catalog = SkillCatalog([load_skill(folder)])
    (folder / "a.txt").write_text("after, edited on disk")
    served = catalog.file("skill://demo/a.txt")
    assert served is not None and served.content() == b"before"
    assert served.digest == "sha256:" + hashlib.sha256(b"before").hexdigest()
    (tmp_path / "secret.txt").write_text("not part of the skill")
    (folder / "leak.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(SkillError, match="outside the skill folder; copy the file in instead"):
        load_skill(folder)


def test_quoted_values_and_nested_metadata_parse_as_yaml_would(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "demo", 'name: demo\ndescription: "Say: hi"\nmetadata:\n  version: \'2.0\'\n  author: x')
    assert load_skill(folder).frontmatter == {
        "name": "demo", "description": "Say: hi", "metadata": {"version": "2.0", "author": "x"}}


# -- the conformance suite's scenarios ---------------------------------------------------------


@pytest.fixture(scope="module")
def served_fixtures() -> Iterator[dict[str, str]]:
    """Both conformance fixtures over Streamable HTTP in this process: name -> URL."""
    urls: dict[str, str] = {}
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []
    for name in ("conformance_server", "conformance_app_server"):
        spec = importlib.util.spec_from_file_location(f"skills_{name}", REPO / "examples" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if name == "conformance_server":
            handwritten = module.ConformanceServer()
            asgi = http_app(handwritten, **module.serving_options(handwritten))
        else:
            asgi = http_app(module.app)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(asgi, log_level="critical", lifespan="on"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:  # uvicorn's own readiness flag
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        servers.append((server, thread))
        urls[name] = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    yield urls
    for server, thread in servers:
        server.should_exit = True
        thread.join(10)


@pytest.mark.parametrize("fixture_name", ["conformance_server", "conformance_app_server"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_skills_scenario_passes(
    scenario: str, fixture_name: str, served_fixtures: dict[str, str], suite: tuple[Path, Path], tmp_path: Path,
) -> None:
    node, index = suite
    command = [str(node), str(index), "server", "--url", served_fixtures[fixture_name], "--scenario", scenario,
               "-o", str(tmp_path)]
    ran = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    output = ran.stdout + ran.stderr
    totals = re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", output)
    assert totals, output[-3000:]
    passed, total, failed, warnings = (int(g) for g in totals.groups())
    assert (failed, warnings) == (0, 0) and passed == total, output[-3000:]
    assert "SKIPPED" not in output, output[-3000:]  # the extension is declared: nothing skips
