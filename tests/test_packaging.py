"""The built distributions: the generator's ships templates, pins and schemas and works
outside the repository; the runtime's (``runtime/``) ships the runtime and the generated
packages, and nothing of the generator."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import RELEASED, REPO_ROOT
from venv_support import clean_environment, fresh_venv


def build_sdist_then_wheel(source: Path, out: Path) -> tuple[Path, Path]:
    """``python -m build`` as a user runs it: the sdist, then the wheel built from that sdist
    (not from the tree), into ``out``. Without build isolation (this venv's setuptools and
    build, from the ``dev`` extra), so offline."""
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        check=True, capture_output=True, timeout=600,
    )
    (sdist,) = out.glob("*.tar.gz")
    (built,) = out.glob("*.whl")
    return sdist, built


@pytest.fixture(scope="module")
def generator_dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The generator's sdist and the wheel built from it, from a copy of what its
    pyproject.toml packages (so no stale ``build/`` or ``*.egg-info`` in the checkout can slip
    into them)."""
    source = tmp_path_factory.mktemp("generator-source")
    ignore = shutil.ignore_patterns("*.egg-info", "build", "__pycache__")
    for folder in ("codegen", "schema", "templates"):
        shutil.copytree(REPO_ROOT / folder, source / folder, ignore=ignore)
    for file in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO_ROOT / file, source / file)
    return build_sdist_then_wheel(source, tmp_path_factory.mktemp("generator-dist"))


@pytest.fixture(scope="module")
def wheel(generator_dists: tuple[Path, Path]) -> Path:
    return generator_dists[1]


@pytest.fixture(scope="module")
def runtime_dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The runtime's sdist and the wheel built from it, from a copy of ``runtime/`` (its
    ``mcp_generated`` symlink kept as a symlink) and the ``generated/`` it points at."""
    source = tmp_path_factory.mktemp("runtime-source")
    ignore = shutil.ignore_patterns("*.egg-info", "build", "__pycache__")
    shutil.copytree(REPO_ROOT / "runtime", source / "runtime", ignore=ignore, symlinks=True)
    shutil.copytree(REPO_ROOT / "generated", source / "generated", ignore=ignore)
    assert (source / "runtime" / "mcp_generated").is_symlink()
    return build_sdist_then_wheel(source / "runtime", tmp_path_factory.mktemp("runtime-dist"))


@pytest.fixture(scope="module")
def runtime_wheel(runtime_dists: tuple[Path, Path]) -> Path:
    return runtime_dists[1]


def metadata_of(wheel: Path) -> list[str]:
    archive = zipfile.ZipFile(wheel)
    (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    return archive.read(name).decode().splitlines()


def test_wheel_ships_templates_pins_and_only_the_generator(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = {n for n in names if n.startswith("typedmcp_codegen/templates/") and n.endswith(".j2")}
    assert len(templates) == len(list((REPO_ROOT / "templates").glob("*.j2")))
    assert "typedmcp_codegen/schema/pins.json" in names
    assert "typedmcp_codegen/schema/extensions/pins.json" in names
    for extension in ("ext-apps", "ext-tasks"):
        assert f"typedmcp_codegen/schema/extensions/{extension}/schema.json" in names
        assert f"typedmcp_codegen/schema/extensions/{extension}/LICENSE" in names
    assert "typedmcp_codegen/py.typed" in names
    # the runtime is its own distribution
    assert not any(n.startswith("typedmcp_codegen/runtime/") for n in names)
    assert not any(n.startswith(("typedmcp/", "mcp_generated/")) for n in names)
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
    metadata = metadata_of(wheel)
    assert "Requires-Dist: typedmcp==0.4.0" in metadata
    assert "Version: 0.4.0" in metadata


def test_runtime_wheel_ships_the_runtime_and_every_generated_package(runtime_wheel: Path) -> None:
    archive = zipfile.ZipFile(runtime_wheel)
    names = set(archive.namelist())
    for module in ("__init__.py", "py.typed", "protocol/model.py", "protocol/spec.py",
                   "protocol/stubs.py", "connecting.py", "serving.py", "host/cli.py", "state/sessions.py"):
        assert f"typedmcp/{module}" in names, module
    assert "mcp_generated/py.typed" in names
    for revision in ("v2024_11_05", "v2025_03_26", "v2025_06_18", "v2025_11_25", "v2026_07_28"):
        assert f"mcp_generated/{revision}/models/__init__.py" in names
        assert f"mcp_generated/{revision}/models/call_tool_result.py" in names
        assert f"mcp_generated/{revision}/dispatch.py" in names
    assert not any(n.startswith(("typedmcp_codegen/", "tests/", "benchmarks/")) for n in names)
    metadata = metadata_of(runtime_wheel)
    assert "Name: typedmcp" in metadata and "Version: 0.4.0" in metadata
    assert "License-Expression: MIT AND Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata and "License-File: SCHEMA-LICENSE" in metadata
    (dist_info,) = {n.split("/")[0] for n in names if ".dist-info/" in n}
    assert archive.read(f"{dist_info}/licenses/LICENSE") == (REPO_ROOT / "LICENSE").read_bytes()
    # the generated packages carry the schemas' descriptions: their licence comes along
    schema_licence = archive.read(f"{dist_info}/licenses/SCHEMA-LICENSE")
    assert schema_licence == (REPO_ROOT / "schema" / "LICENSE").read_bytes()
    for extension in ("ext-apps", "ext-tasks"):  # so do the extensions' packages
        shipped = archive.read(f"{dist_info}/licenses/extension-licenses/{extension}/LICENSE")
        assert shipped == (REPO_ROOT / "schema" / "extensions" / extension / "LICENSE").read_bytes()
    for name in ("apps", "tasks"):
        assert f"mcp_generated/extensions/{name}/dispatch.py" in names
        assert f"mcp_generated/extensions/{name}/models/__init__.py" in names
    required = sorted(line.removeprefix("Requires-Dist: ") for line in metadata
                      if line.startswith("Requires-Dist: "))
    assert required == [
        "aiohttp>=3.11; extra == \"http\"",
        "httptools>=0.6; extra == \"http\"",
        "jsonschema>=4.23",
        "limits<6,>=5.0; extra == \"ratelimit\"",
        "opentelemetry-api>=1.27; extra == \"otel\"",
        "pydantic-monty==1.4.0; extra == \"codemode\"",
        "pydantic<3,>=2.11",
        "pyjwt[crypto]>=2.10; extra == \"auth\"",
        "redis>=5.0; extra == \"ratelimit\"",
        "redis>=5.0; extra == \"redis\"",
        "typing-extensions>=4.12",
        "uvicorn>=0.30; extra == \"http\"",
        "uvloop>=0.19; (sys_platform != \"win32\" and platform_python_implementation == \"CPython\") and extra == \"http\"",
    ]
    entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    assert "mcp-host = typedmcp.host.cli:main" in entry_points
    # the test fixtures (mcp_client, mcp_transport, mcp_revision) reach every user's pytest
    assert "[pytest11]\ntypedmcp = typedmcp.pytest_plugin" in entry_points
    assert {"typedmcp/pytest_plugin.py", "typedmcp/testing.py"} <= set(archive.namelist())


def test_wheel_ships_the_released_schemas_with_their_licence(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    shipped = sorted(n for n in names if n.endswith("/schema.json") and "/extensions/" not in n)
    assert shipped == [f"typedmcp_codegen/schema/{revision}/schema.json" for revision in RELEASED]
    # the official test vectors beside them in schema/ are the repository's, not package data
    assert not any("/examples/" in n or "/draft/" in n or n.endswith("SHA256SUMS") for n in names)
    for revision in RELEASED:
        data = archive.read(f"typedmcp_codegen/schema/{revision}/schema.json")
        assert data == (REPO_ROOT / "schema" / revision / "schema.json").read_bytes()
    assert "typedmcp_codegen/schema/LICENSE" in names


def test_wheel_carries_licence_metadata(wheel: Path) -> None:
    """The project's MIT licence and the shipped schemas' upstream licence, both declared."""
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    dist_info = metadata_name.rsplit("/", 1)[0]
    assert archive.read(f"{dist_info}/licenses/LICENSE") == (REPO_ROOT / "LICENSE").read_bytes()
    assert archive.read(f"{dist_info}/licenses/schema/LICENSE") == (
        REPO_ROOT / "schema" / "LICENSE"
    ).read_bytes()
    assert (REPO_ROOT / "LICENSE").read_text().startswith("MIT License")
    metadata = archive.read(metadata_name).decode()
    assert "License-Expression: MIT AND Apache-2.0" in metadata.splitlines()
    assert {"License-File: LICENSE", "License-File: schema/LICENSE"} <= set(metadata.splitlines())


def test_an_old_checkouts_file_list_adds_nothing_to_the_runtimes_sdist(tmp_path: Path) -> None:
    """A checkout installed while ``mcp_generated`` was mapped to ``../generated`` keeps a
    ``typedmcp.egg-info/SOURCES.txt`` naming those files, which setuptools re-reads: the
    sdist must neither copy them beside ``runtime/`` nor pack them a second time."""
    ignore = shutil.ignore_patterns("*.egg-info", "build", "__pycache__")
    shutil.copytree(REPO_ROOT / "runtime", tmp_path / "runtime", ignore=ignore, symlinks=True)
    shutil.copytree(REPO_ROOT / "generated", tmp_path / "generated", ignore=ignore)
    stale = tmp_path / "runtime" / "typedmcp.egg-info"
    stale.mkdir()
    (stale / "SOURCES.txt").write_text(
        "pyproject.toml\n../generated/mcp_generated/__init__.py\n../generated/mcp_generated/py.typed\n"
    )
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path / "dist"),
         str(tmp_path / "runtime")],
        check=True, capture_output=True, timeout=300,
    )
    assert not (tmp_path / "runtime" / "generated").exists()
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert not any("/../" in name or "/generated/" in name for name in names)
    assert names.count("typedmcp-0.4.0/mcp_generated/__init__.py") == 1


def test_the_sdists_build_wheels_that_install_alone_in_a_fresh_venv(
    generator_dists: tuple[Path, Path], runtime_dists: tuple[Path, Path], tmp_path: Path
) -> None:
    """Both sdists hold what their wheels need (the runtime's, the generated packages, as
    files); the wheels built from them install by name from a folder of wheels into a fresh
    venv with no checkout on its path, their dependencies met by what is installed (pip
    reads the metadata: the generator's ``typedmcp==0.4.0`` is the runtime's wheel), then
    import and generate offline: no schema dir, no cache, no network."""
    (generator_sdist, _), (runtime_sdist, _) = generator_dists, runtime_dists
    with tarfile.open(runtime_sdist) as archive:
        members = {member.name.split("/", 1)[1]: member for member in archive.getmembers() if "/" in member.name}
    generated = sorted(
        path.relative_to(REPO_ROOT / "generated").as_posix()
        for path in (REPO_ROOT / "generated" / "mcp_generated").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    assert [name for name in generated if name not in members] == []
    assert all(members[name].isfile() for name in generated)  # files, not a symlink
    with tarfile.open(generator_sdist) as archive:
        names = archive.getnames()
    assert any(name.endswith("/schema/2025-06-18/schema.json") for name in names)
    assert not any("/examples/" in name or "/draft/" in name for name in names)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for _, built in (generator_dists, runtime_dists):
        shutil.copy2(built, wheels)

    venv = fresh_venv(tmp_path / "venv", tmp_path / "borrowed")
    installed = venv.pip_install("--find-links", str(wheels), "typedmcp-codegen")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Successfully installed typedmcp-0.4.0 typedmcp-codegen-0.4.0" in installed.stdout
    python, site, environment = venv.python, venv.site, clean_environment()

    environment.update(MCP_CODEGEN_OFFLINE="1", MCP_CODEGEN_CACHE_DIR=str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    generate = subprocess.run(
        [str(venv.root / "bin" / "mcp-codegen"), "--version", "2025-06-18", "--out", "x"],
        cwd=work, env=environment, capture_output=True, text=True, timeout=300, check=False,
    )
    assert generate.returncode == 0, generate.stderr
    assert not (tmp_path / "cache").exists()
    used = subprocess.run(
        [str(python), "-c",
         "import sys, typedmcp, typedmcp_codegen, mcp_generated, x\n"
         "from mcp_generated.v2026_07_28 import client\n"
         "from x import models\n"
         "result = models.CallToolResult(content=[models.TextContent(text='hi')])\n"
         "print(typedmcp.__file__, typedmcp_codegen.__file__, mcp_generated.__file__, client.__file__)\n"
         "print(x.PROTOCOL_VERSION, x.SCHEMA_SHA256)\n"
         "print(result.model_dump_json())\n"
         "print(*sys.path)\n"],
        cwd=work, env=environment, capture_output=True, text=True, timeout=120, check=False,
    )
    assert used.returncode == 0, used.stderr
    files, version_line, dumped, path = used.stdout.splitlines()
    assert all(file.startswith(str(site)) for file in files.split()), files  # the installed wheels
    assert not any(entry.startswith(str(REPO_ROOT)) for entry in path.split()), path  # no checkout
    assert version_line.split() == [
        "2025-06-18",
        "af845e7e5b9d27107d1690f0936022546177a1403e63ffb11470135b296a2e01",
    ]
    assert dumped == '{"content":[{"text":"hi","type":"text"}]}'
    host = subprocess.run(
        [str(venv.root / "bin" / "mcp-host"), "--help"], cwd=work, env=environment,
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert host.returncode == 0 and "usage" in host.stdout.lower(), host.stdout + host.stderr


def test_installed_generator_works_outside_the_repository(
    wheel: Path, tmp_path: Path, spec_dir: Path
) -> None:
    environment = {
        **os.environ,
        "PYTHONPATH": str(wheel),
        "MCP_CODEGEN_SCHEMA_DIR": str(spec_dir),
        "MCP_CODEGEN_OFFLINE": "1",
    }
    probe = subprocess.run(
        [sys.executable, "-c", "import typedmcp_codegen; print(typedmcp_codegen.__file__)"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.startswith(str(wheel)), "the test must run the wheel, not the checkout"
    subprocess.run(
        [sys.executable, "-m", "typedmcp_codegen", "--version", "2025-06-18", "--out", "vendor/pkg"],
        cwd=tmp_path,
        env=environment,
        check=True,
        capture_output=True,
    )
    committed = REPO_ROOT / "generated" / "mcp_generated" / "v2025_06_18"
    written = tmp_path / "vendor" / "pkg"
    files = sorted(p.name for p in committed.glob("*.py"))
    assert sorted(p.name for p in written.glob("*.py")) == files
    _, mismatch, errors = filecmp.cmpfiles(committed, written, files, shallow=False)
    assert (mismatch, errors) == ([], [])
