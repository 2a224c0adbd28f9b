"""The built distribution ships templates and pins, and works outside the repository."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO_ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("mcp_codegen-*.whl")
    return built


def test_wheel_ships_templates_pins_runtime_and_generated_packages(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = {n for n in names if n.startswith("mcp_codegen/templates/") and n.endswith(".j2")}
    assert len(templates) == len(list((REPO_ROOT / "templates").glob("*.j2")))
    assert "mcp_codegen/schema/pins.json" in names
    assert "mcp_codegen/runtime/spec.py" in names
    for revision in ("v2024_11_05", "v2025_03_26", "v2025_06_18", "v2025_11_25", "v2026_07_28"):
        assert f"mcp_generated/{revision}/models/__init__.py" in names
        assert f"mcp_generated/{revision}/models/call_tool_result.py" in names
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


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
        [sys.executable, "-c", "import mcp_codegen; print(mcp_codegen.__file__)"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.startswith(str(wheel)), "the test must run the wheel, not the checkout"
    subprocess.run(
        [sys.executable, "-m", "mcp_codegen", "--version", "2025-06-18", "--out", "vendor/pkg"],
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
