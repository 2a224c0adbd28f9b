"""Fresh venvs for the packaging tests: no checkout on their path, this venv's installed
dependencies borrowed (offline), our own distributions installed into them by the test."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

#: Our own distributions and this checkout's editable installs: never borrowed.
OURS = ("typedmcp", "mcp_generated", "__editable__", "_typedmcp")


@dataclass(frozen=True)
class Venv:
    root: Path
    python: Path
    site: Path  # its site-packages

    def pip_install(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``pip install ARGS`` into this venv (this venv's pip, ``--python``), offline and
        free of this machine's pip configuration."""
        return subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(self.python), "install", "--no-index", *args],
            cwd=cwd, env=clean_environment(), capture_output=True, text=True, timeout=300,
            check=False,
        )


def clean_environment() -> dict[str, str]:
    """This process's environment without pip, Python path and mcp-codegen settings."""
    environment = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("MCP_CODEGEN", "PIP_", "PYTHON", "VIRTUAL_ENV"))
    }
    environment.update(PIP_CONFIG_FILE=os.devnull, PYTHONNOUSERSITE="1")
    return environment


def fresh_venv(root: Path, farm: Path) -> Venv:
    """A venv at ``root`` (no pip of its own) whose dependencies are this venv's installed
    packages minus ours: one symlink per entry of this site-packages in ``farm``, named by a
    ``.pth`` line (read as a plain folder: this venv's own ``.pth`` files, its editable
    hooks included, do not run there)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip())
    farm.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(OURS) and not entry.name.endswith(".pth"):
            (farm / entry.name).symlink_to(entry)
    (site / "borrowed.pth").write_text(f"{farm}\n")
    return Venv(root, python, site)
