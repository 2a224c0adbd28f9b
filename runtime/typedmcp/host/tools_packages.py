"""``mcp-host tools --config FILE --out DIR``: one typed tools package per configured server.

Each enabled server's package is written to ``DIR/<the server's name as an identifier>/`` by
the generator's own command (``python -m typedmcp_codegen tools --config FILE --server NAME``),
run as a child process: the runtime never imports the generator, which is a separate
distribution (``typedmcp-codegen``). A server that cannot start, or whose tools cannot be
generated, is reported with why; the others are still written.
"""

from __future__ import annotations

import importlib.util
import keyword
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .config import HostConfig

GENERATOR_MODULE = "typedmcp_codegen"
#: Seconds one server's generation may take (start-up, tools/list, generation).
GENERATION_TIMEOUT = 300.0


@dataclass(frozen=True)
class PackageOutcome:
    """What became of one server: its package folder, and why it failed (None: written)."""

    server: str
    folder: Path
    failure: str | None
    summary: str


def package_identifier(server: str) -> str:
    """A server's name as a Python package name: ``my-server.v2`` -> ``my_server_v2``,
    ``2fa`` -> ``server_2fa``, ``class`` -> ``class_``."""
    name = re.sub(r"\W+", "_", server).strip("_").lower() or "server"
    if name[0].isdigit():
        name = f"server_{name}"
    return f"{name}_" if keyword.iskeyword(name) else name


def package_folders(config: HostConfig, out: Path) -> dict[str, Path]:
    """Each enabled server's package folder; ValueError names two servers that would share one."""
    folders: dict[str, Path] = {}
    owner: dict[str, str] = {}
    for name, server in config.servers.items():
        if server.disabled:
            continue
        identifier = package_identifier(name)
        if identifier in owner:
            raise ValueError(f"servers {owner[identifier]!r} and {name!r} would both be written to "
                             f"{out / identifier}; rename one of them in the configuration")
        owner[identifier] = name
        folders[name] = out / identifier
    return folders


def generator_installed() -> bool:
    """Whether the generator's distribution is importable (found, never imported here)."""
    return importlib.util.find_spec(GENERATOR_MODULE) is not None


def generate_package(config_path: str, server: str, folder: Path) -> PackageOutcome:
    """Run ``mcp-codegen tools`` for one server of the configuration file."""
    command = [sys.executable, "-m", GENERATOR_MODULE, "tools", "--out", str(folder),
               "--config", config_path, "--server", server]
    try:
        ran = subprocess.run(command, capture_output=True, text=True, timeout=GENERATION_TIMEOUT,
                             check=False)
    except subprocess.TimeoutExpired:
        return PackageOutcome(server, folder, f"generation took over {GENERATION_TIMEOUT:.0f} s", "")
    if ran.returncode != 0:
        lines = [line.strip() for line in ran.stderr.splitlines() if line.strip()]
        why = " ".join(line for line in lines if not line.startswith("warning:")) or \
            f"mcp-codegen exited with code {ran.returncode}"
        return PackageOutcome(server, folder, re.sub(r"^(?i:error):\s*", "", why), "")
    warnings = [line for line in ran.stderr.splitlines() if line.startswith("warning:")]
    return PackageOutcome(server, folder, None, "\n".join([ran.stdout.strip(), *warnings]))


def generate_packages(config: HostConfig, config_path: str, out: Path,
                      report: Callable[[PackageOutcome], None]) -> list[PackageOutcome]:
    """Every enabled server's package, one after another; ``report`` sees each outcome."""
    outcomes = []
    for server, folder in package_folders(config, out).items():
        outcome = generate_package(config_path, server, folder)
        report(outcome)
        outcomes.append(outcome)
    return outcomes
