"""Stage 1 (load): lookup order, sha256 verification, parsing and meta-validation."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES

from typedmcp_codegen import load
from typedmcp_codegen.errors import CodegenError
from typedmcp_codegen.load import (
    CACHE_DIR_ENV,
    OFFLINE_ENV,
    SCHEMA_DIR_ENV,
    SchemaSource,
    load_schema,
    meta_validate,
    parse_json,
)
from typedmcp_codegen.pins import PinTable, load_pins, parse_pins

REPO_SCHEMA = Path(__file__).resolve().parent.parent / "schema"

TINY = FIXTURES / "schemas" / "tiny" / "schema.json"
DIALECT_2020 = "https://json-schema.org/draft/2020-12/schema"
REVISION = "2031-01-01"
URL = "https://example.invalid/schema/2031-01-01/schema.json"


def fake_pins(raw: bytes, *, dialect: str = DIALECT_2020) -> PinTable:
    """A pin table whose only revision pins ``raw``."""
    return parse_pins(
        {
            "upstream_commit": "0" * 40,
            "latest": REVISION,
            "revisions": [
                {
                    "revision": REVISION,
                    "released": True,
                    "era": "handshake",
                    "dialect": dialect,
                    "sha256": hashlib.sha256(raw).hexdigest(),
                    "url": URL,
                }
            ],
        }
    )


class FakeDownload:
    """Stands in for the network: records the URLs asked for and returns fixed bytes."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.urls: list[str] = []

    def __call__(self, url: str) -> bytes:
        self.urls.append(url)
        return self.payload


@pytest.fixture
def raw() -> bytes:
    return TINY.read_bytes()


@pytest.fixture
def places(tmp_path: Path, raw: bytes) -> dict[str, Path]:
    """The same schema bytes in each place the loader looks: file, schema dir, cache."""
    pins = fake_pins(raw)
    explicit = tmp_path / "explicit.json"
    explicit.write_bytes(raw)
    schema_dir = tmp_path / "schemas"
    (schema_dir / REVISION).mkdir(parents=True)
    (schema_dir / REVISION / "schema.json").write_bytes(raw)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"{pins.pins[0].sha256}.json").write_bytes(raw)
    return {"file": explicit, "dir": schema_dir, "cache": cache, "empty": tmp_path / "none"}


@pytest.fixture
def download(monkeypatch: pytest.MonkeyPatch, raw: bytes) -> FakeDownload:
    fake = FakeDownload(raw)
    monkeypatch.setattr(load, "_download", fake)
    return fake


def test_explicit_file_wins_over_schema_dir_cache_and_download(
    places: dict[str, Path], raw: bytes, download: FakeDownload
) -> None:
    source = SchemaSource(places["file"], places["dir"], places["cache"], True)
    loaded = load_schema(REVISION, fake_pins(raw), source)
    assert loaded.origin == str(places["file"])
    assert loaded.pinned and download.urls == []


def test_schema_dir_wins_over_cache_and_download(
    places: dict[str, Path], raw: bytes, download: FakeDownload
) -> None:
    source = SchemaSource(None, places["dir"], places["cache"], True)
    loaded = load_schema(REVISION, fake_pins(raw), source)
    assert loaded.origin == str(places["dir"] / REVISION / "schema.json")
    assert download.urls == []


def test_cache_wins_over_download(
    places: dict[str, Path], raw: bytes, download: FakeDownload
) -> None:
    source = SchemaSource(None, places["empty"], places["cache"], True)
    loaded = load_schema(REVISION, fake_pins(raw), source)
    assert loaded.origin == str(places["cache"] / f"{loaded.sha256}.json")
    assert download.urls == []


def test_download_is_last_and_stores_a_verified_file_in_the_cache(
    tmp_path: Path, raw: bytes, download: FakeDownload
) -> None:
    cache = tmp_path / "new-cache"
    source = SchemaSource(None, tmp_path / "none", cache, True)
    loaded = load_schema(REVISION, fake_pins(raw), source)
    assert download.urls == [URL]
    assert loaded.origin == URL
    assert (cache / f"{loaded.sha256}.json").read_bytes() == raw
    assert sorted(p.name for p in cache.iterdir()) == [f"{loaded.sha256}.json"]


def test_a_wrong_download_fails_the_pin_and_is_not_cached(
    tmp_path: Path, raw: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(load, "_download", FakeDownload(raw + b" "))
    cache = tmp_path / "cache"
    source = SchemaSource(None, None, cache, True)
    with pytest.raises(CodegenError, match="does not match the pin") as caught:
        load_schema(REVISION, fake_pins(raw), source)
    assert URL in caught.value.problem and REVISION in caught.value.problem
    assert not cache.exists() or list(cache.iterdir()) == []


def test_no_schema_anywhere_lists_every_place_tried(
    tmp_path: Path, raw: bytes, download: FakeDownload
) -> None:
    source = SchemaSource(None, tmp_path / "schemas", tmp_path / "cache", False)
    with pytest.raises(CodegenError) as caught:
        load_schema(REVISION, fake_pins(raw), source)
    problem = caught.value.problem
    assert f"no schema file for revision {REVISION}" in problem
    assert str(tmp_path / "schemas" / REVISION / "schema.json") in problem
    assert str(tmp_path / "cache") in problem
    assert f"{URL} (download disabled)" in problem
    assert SCHEMA_DIR_ENV in caught.value.fix
    assert download.urls == []


def test_a_failed_download_is_reported_with_its_reason(
    tmp_path: Path, raw: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(url: str) -> bytes:
        raise OSError("connection refused")

    monkeypatch.setattr(load, "_download", refuse)
    with pytest.raises(CodegenError, match=r"connection refused"):
        load_schema(REVISION, fake_pins(raw), SchemaSource(None, None, tmp_path, True))


def test_found_file_with_wrong_sha256_does_not_fall_through_to_the_cache(
    places: dict[str, Path], raw: bytes
) -> None:
    edited = places["dir"] / REVISION / "schema.json"
    edited.write_bytes(raw.replace(b"Plain text.", b"Plain text!"))
    source = SchemaSource(None, places["dir"], places["cache"], False)
    with pytest.raises(CodegenError, match="does not match the pin") as caught:
        load_schema(REVISION, fake_pins(raw), source)
    assert str(edited) in caught.value.problem


def test_unknown_revision_names_the_pinned_ones() -> None:
    pins = load_pins()
    with pytest.raises(CodegenError) as caught:
        load_schema("1999-01-01", pins, SchemaSource(allow_download=False))
    for name in pins.names:
        assert name in caught.value.problem
    assert "--schema FILE --version 1999-01-01" in caught.value.fix


def test_unpinned_revision_from_an_explicit_file_is_unverified(raw: bytes) -> None:
    loaded = load_schema("2099-01-01", load_pins(), SchemaSource(schema_file=TINY))
    assert (loaded.revision, loaded.pinned) == ("2099-01-01", False)
    assert loaded.sha256 == hashlib.sha256(raw).hexdigest()


def test_latest_resolves_to_the_pinned_latest(offline_source: SchemaSource) -> None:
    pins = load_pins()
    loaded = load_schema("latest", pins, offline_source)
    assert loaded.revision == pins.latest == "2026-07-28"
    assert loaded.sha256 == pins.find("2026-07-28").sha256  # type: ignore[union-attr]


def test_every_released_revision_loads_from_the_shared_folder(
    offline_source: SchemaSource,
) -> None:
    pins = load_pins()
    for pin in pins.released:
        loaded = load_schema(pin.revision, pins, offline_source)
        assert (loaded.revision, loaded.sha256, loaded.pinned) == (pin.revision, pin.sha256, True)
        assert loaded.document["$schema"] == pin.dialect


def test_schema_dir_env_var_is_honoured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("from-env", "explicit"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv(SCHEMA_DIR_ENV, str(tmp_path / "from-env"))
    from_env = SchemaSource.from_environment()
    assert (from_env.schema_dir, from_env.schema_dir_named_by) == (tmp_path / "from-env", SCHEMA_DIR_ENV)
    explicit = SchemaSource.from_environment(schema_dir=tmp_path / "explicit")
    assert (explicit.schema_dir, explicit.schema_dir_named_by) == (tmp_path / "explicit", "--schema-dir")


def test_a_named_schema_dir_must_exist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(SCHEMA_DIR_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(CodegenError, match=f"{SCHEMA_DIR_ENV}=.*nowhere: does not exist"):
        SchemaSource.from_environment()
    with pytest.raises(CodegenError, match=r"--schema-dir .*elsewhere: does not exist"):
        SchemaSource.from_environment(schema_dir=tmp_path / "elsewhere")


def test_unknown_codegen_variables_are_named_with_the_closest_known_one() -> None:
    environ = {"MCP_CODEGEN_SCHEMADIR": "x", SCHEMA_DIR_ENV: "y", "MCP_CODEGEN_CACHEDIR": "z", "HOME": "/"}
    assert load.unknown_environment(environ) == [
        f"MCP_CODEGEN_CACHEDIR is set, but mcp-codegen reads no such variable; did you mean {CACHE_DIR_ENV}?",
        f"MCP_CODEGEN_SCHEMADIR is set, but mcp-codegen reads no such variable; did you mean {SCHEMA_DIR_ENV}?",
    ]


def test_schema_dir_env_var_is_used_for_lookup(
    monkeypatch: pytest.MonkeyPatch, places: dict[str, Path], raw: bytes
) -> None:
    monkeypatch.setenv(SCHEMA_DIR_ENV, str(places["dir"]))
    monkeypatch.setenv(CACHE_DIR_ENV, str(places["cache"]))
    loaded = load_schema(REVISION, fake_pins(raw), SchemaSource.from_environment(offline=True))
    assert loaded.origin == str(places["dir"] / REVISION / "schema.json")


def test_cache_dir_comes_from_env_then_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "c"))
    assert SchemaSource.from_environment().cache_dir == tmp_path / "c"
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert SchemaSource.from_environment().cache_dir == tmp_path / "xdg" / "mcp-codegen"


def test_offline_flag_and_env_var_disable_download(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    assert SchemaSource.from_environment().allow_download
    assert not SchemaSource.from_environment(offline=True).allow_download
    monkeypatch.setenv(OFFLINE_ENV, "1")
    assert not SchemaSource.from_environment().allow_download


def test_parse_json_names_file_line_and_column() -> None:
    with pytest.raises(CodegenError, match=r"some.json: invalid JSON: .* line 2 column"):
        parse_json(b'{\n  "a": }', "some.json")


def test_parse_json_rejects_non_utf8_and_non_objects() -> None:
    with pytest.raises(CodegenError, match="not UTF-8"):
        parse_json(b"\xff\xfe{}", "f.json")
    with pytest.raises(CodegenError, match="JSON list, not an object"):
        parse_json(b"[1, 2]", "f.json")


def tiny_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(TINY.read_text())
    return document


def test_meta_validation_reports_the_json_pointer() -> None:
    document = tiny_document()
    document["$defs"]["Gadget"]["properties"]["name"]["type"] = 5
    with pytest.raises(CodegenError, match="fails meta-validation") as caught:
        meta_validate(document, "bad.json", None)
    assert "/$defs/Gadget/properties/name/type" in caught.value.problem


def test_meta_validation_needs_a_dialect_and_definitions() -> None:
    document = tiny_document()
    del document["$schema"]
    with pytest.raises(CodegenError, match=r"no '\$schema'"):
        meta_validate(document, "f.json", None)
    with pytest.raises(CodegenError, match="unsupported JSON Schema dialect"):
        meta_validate({"$schema": "https://example.invalid/dialect", "$defs": {}}, "f.json", None)
    with pytest.raises(CodegenError, match="neither '\\$defs' nor 'definitions'"):
        meta_validate({"$schema": DIALECT_2020}, "f.json", None)


def test_pinned_dialect_must_match(raw: bytes) -> None:
    pins = fake_pins(raw, dialect="http://json-schema.org/draft-07/schema#")
    with pytest.raises(CodegenError, match=r"the pin says http://json-schema\.org/draft-07"):
        load_schema(REVISION, pins, SchemaSource(schema_file=TINY))


def test_unreadable_schema_file_is_a_codegen_error(tmp_path: Path) -> None:
    with pytest.raises(CodegenError, match="cannot read schema file"):
        load_schema("2099-01-01", load_pins(), SchemaSource(schema_file=tmp_path / "absent.json"))


# the schemas shipped inside the package (lookup: explicit places, shipped, cache, download)


def test_every_released_revision_is_shipped_with_the_upstream_licence(spec_dir: Path) -> None:
    pins = load_pins()
    for pin in pins.released:
        shipped = load.shipped_schema_path(pin)
        assert shipped is not None, pin.revision
        raw = shipped.read_bytes()
        assert hashlib.sha256(raw).hexdigest() == pin.sha256
        assert raw == (spec_dir / pin.revision / "schema.json").read_bytes()
    draft = pins.find("draft")
    assert draft is not None and draft.floating
    # draft moves upstream: never shipped, though this checkout's schema/ (which an editable
    # install reads as the package's) holds a copy of it among the official test vectors
    assert (REPO_SCHEMA / "draft" / "schema.json").is_file()
    assert load.shipped_schema_path(draft) is None
    assert (REPO_SCHEMA / "LICENSE").read_bytes() == (spec_dir / "LICENSE").read_bytes()


def test_shipped_schema_needs_no_schema_dir_cache_or_network(
    tmp_path: Path, download: FakeDownload
) -> None:
    source = SchemaSource(None, None, tmp_path / "cache", False)
    pins = load_pins()
    loaded = load_schema("2025-06-18", pins, source)
    assert loaded.pinned and loaded.revision == "2025-06-18"
    pin = pins.find("2025-06-18")
    assert pin is not None
    assert loaded.origin == f"{load.shipped_schema_path(pin)} (shipped with mcp-codegen)"
    assert download.urls == [] and not (tmp_path / "cache").exists()


def test_explicit_schema_dir_wins_over_the_shipped_schema(
    tmp_path: Path, spec_dir: Path
) -> None:
    schemas = tmp_path / "schemas" / "2025-06-18"
    schemas.mkdir(parents=True)
    (schemas / "schema.json").write_bytes((spec_dir / "2025-06-18" / "schema.json").read_bytes())
    loaded = load_schema("2025-06-18", load_pins(), SchemaSource(None, tmp_path / "schemas"))
    assert loaded.origin == str(schemas / "schema.json")


def test_shipped_schema_wins_over_cache_and_download(
    tmp_path: Path, download: FakeDownload
) -> None:
    pins = load_pins()
    pin = pins.find("2024-11-05")
    assert pin is not None and pin.sha256 is not None
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"{pin.sha256}.json").write_bytes(b"never read")
    loaded = load_schema("2024-11-05", pins, SchemaSource(None, None, cache, True))
    assert "cache" not in loaded.origin and download.urls == []


def test_a_corrupt_shipped_schema_is_refused_with_reinstall_advice(
    tmp_path: Path, spec_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corrupt = tmp_path / "schema.json"
    corrupt.write_bytes((spec_dir / "2025-06-18" / "schema.json").read_bytes() + b" ")
    monkeypatch.setattr(load, "shipped_schema_path", lambda pin: corrupt)
    with pytest.raises(CodegenError, match="does not match the pin") as caught:
        load_schema("2025-06-18", load_pins(), SchemaSource(None, None, None, False))
    assert str(corrupt) in caught.value.problem
    assert "reinstall mcp-codegen" in caught.value.fix


def test_use_shipped_false_skips_the_shipped_schemas(tmp_path: Path) -> None:
    source = SchemaSource(None, None, tmp_path / "cache", False, use_shipped=False)
    with pytest.raises(CodegenError, match="no schema file for revision 2025-06-18"):
        load_schema("2025-06-18", load_pins(), source)


# draft: unpinned, it follows upstream


def edited_draft(spec_dir: Path, root: Path) -> bytes:
    """Today's draft with one description changed, at ``root/draft/schema.json``."""
    raw = (spec_dir / "draft" / "schema.json").read_bytes().replace(
        b"A progress token", b"A changed progress token", 1
    )
    (root / "draft").mkdir(parents=True)
    (root / "draft" / "schema.json").write_bytes(raw)
    return raw


def test_a_changed_draft_is_generated_from_as_given(tmp_path: Path, spec_dir: Path) -> None:
    raw = edited_draft(spec_dir, tmp_path / "schemas")
    assert raw != (spec_dir / "draft" / "schema.json").read_bytes()
    loaded = load_schema("draft", load_pins(), SchemaSource(None, tmp_path / "schemas"))
    assert (loaded.revision, loaded.pinned) == ("draft", False)
    assert loaded.sha256 == hashlib.sha256(raw).hexdigest()


def test_draft_is_downloaded_from_the_moving_branch_and_never_cached(
    tmp_path: Path, spec_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeDownload((spec_dir / "draft" / "schema.json").read_bytes() + b"\n")
    monkeypatch.setattr(load, "_download", fake)
    cache = tmp_path / "cache"
    loaded = load_schema("draft", load_pins(), SchemaSource(None, None, cache, True))
    (url,) = fake.urls
    assert url.endswith("/main/schema/draft/schema.json")
    assert (loaded.origin, loaded.pinned) == (url, False)
    assert not cache.exists()


# references that point nowhere are the input's fault, found before anything is generated


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("#/$defs/Missing", "no such definition"),
        ("https://example.invalid/other.json#/$defs/Gadget", "not a local definition"),
        ("#/$defs/Gadget/properties/name", "not a local definition"),
    ],
)
def test_a_reference_that_points_nowhere_is_refused(ref: str, reason: str) -> None:
    document = tiny_document()
    document["$defs"]["Gadget"]["properties"]["twin"] = {"$ref": ref}
    with pytest.raises(CodegenError) as caught:
        meta_validate(document, "f.json", None)
    assert f"/$defs/Gadget/properties/twin: {ref} ({reason})" in caught.value.problem
    assert "#/$defs/<Name>" in caught.value.fix
