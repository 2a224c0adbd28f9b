"""After the README's install (``pip install -e ./runtime -e '.[dev]'``), a type checker sees
``typedmcp`` and ``mcp_generated`` in user code (issue 30).

The runtime's editable install is a plain ``.pth`` line naming ``runtime/`` (both packages
sit there: ``runtime/mcp_generated`` is a symlink to ``generated/mcp_generated``), which mypy
and pyright follow; an import-hook finder, setuptools' editable mode for a mapped package
folder, is invisible to them (``import-not-found``). The test makes such a venv from a copy of
the checkout and runs mypy --strict, as the tutorial does, on a user's file and on one with a
type error the checker must find (so the types are really seen, not ``Any``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import REPO_ROOT
from venv_support import clean_environment, fresh_venv

USER_CODE = '''\
from mcp_generated.v2025_11_25 import models
from typedmcp import McpApp, ToolError

app = McpApp("user", version="1.0.0")


@app.tool()
def echo(text: str) -> str:
    """Echo the text."""
    if not text:
        raise ToolError("nothing to echo")
    return text


def first_text(result: models.CallToolResult) -> str:
    block = result.content[0]
    return block.text if isinstance(block, models.TextContent) else ""
'''

WRONG_CODE = '''\
from mcp_generated.v2026_07_28 import models
from typedmcp import McpApp

app = McpApp("user", version=1)
result = models.CallToolResult(content="not a list")
'''


def test_mypy_strict_sees_the_runtime_and_generated_packages_of_an_editable_install(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("*.egg-info", "build", "__pycache__")
    for folder in ("runtime", "generated", "codegen", "schema", "templates"):
        shutil.copytree(REPO_ROOT / folder, checkout / folder, ignore=ignore, symlinks=True)
    for file in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO_ROOT / file, checkout / file)
    venv = fresh_venv(tmp_path / "venv", tmp_path / "borrowed")  # mypy among what it borrows
    # README command 1's install (its dependencies are borrowed: no index, no build isolation)
    installed = venv.pip_install("--no-deps", "--no-build-isolation", "-e", "./runtime", "-e", ".", cwd=checkout)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    project = tmp_path / "project"
    project.mkdir()
    (project / "user.py").write_text(USER_CODE)
    (project / "wrong.py").write_text(WRONG_CODE)

    def mypy(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv.python), "-m", "mypy", "--strict", "--no-incremental", name],
            cwd=project, env=clean_environment(), capture_output=True, text=True, timeout=600,
            check=False,
        )

    found = subprocess.run(
        [str(venv.python), "-c", "import typedmcp, mcp_generated; print(typedmcp.__file__, mcp_generated.__file__)"],
        cwd=project, env=clean_environment(), capture_output=True, text=True, timeout=60, check=True,
    ).stdout.split()
    assert all(Path(file).is_relative_to(checkout) for file in found), found  # the editable copy
    user = mypy("user.py")
    assert user.returncode == 0, user.stdout + user.stderr
    assert "Success: no issues found in 1 source file" in user.stdout
    wrong = mypy("wrong.py")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'Argument "version" to "McpApp" has incompatible type "int"; expected "str"' in wrong.stdout
    assert 'Argument "content" to "CallToolResult" has incompatible type "str"' in wrong.stdout
    assert "import-not-found" not in wrong.stdout
