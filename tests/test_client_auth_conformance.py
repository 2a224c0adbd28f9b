"""The official conformance suite's client auth extension scenarios (0.2.0-alpha.12) pass
against ``examples/conformance_client.py``: client credentials with ``private_key_jwt`` and
with ``client_secret_basic``, enterprise-managed authorization (token exchange for an ID-JAG,
then the JWT-bearer grant), workload identity (RFC 7523 JWT bearer), DPoP, and DPoP with the
authorization server's and the MCP server's nonces. Each scenario runs the suite's own mock
authorization and MCP servers: real servers that check every request of the flow.

The suite is installed by ``scripts/peers.sh`` (Node 22 from PyPI, the suite from npm). While
its default pin is still an older release, alpha.12 goes into a folder of its own under
``.peers`` (``PEERS``/``CONFORMANCE_PKG``), so the other tests keep their pin.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "@modelcontextprotocol/conformance"
VERSION = "0.2.0-alpha.12"
SCENARIOS = (
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/wif-jwt-bearer",
    "auth/dpop",
    "auth/dpop-nonce",
)


def peers_folder() -> Path:
    """``.peers`` when scripts/peers.sh already pins alpha.12, else a folder of its own."""
    script = (REPO / "scripts" / "peers.sh").read_text()
    pinned = re.search(r"CONFORMANCE_PKG:-([^}]+)}", script)
    assert pinned, "scripts/peers.sh no longer reads its conformance pin from CONFORMANCE_PKG"
    if pinned.group(1) == f"{PACKAGE}@{VERSION}":
        return REPO / ".peers"
    return REPO / ".peers" / f"conformance-{VERSION}"


@pytest.fixture(scope="module")
def suite() -> tuple[Path, Path]:
    """(node, the suite's dist/index.js), installed by the project's own script."""
    folder = peers_folder()
    # (the whole environment: npm needs the machine's CA settings, NODE_EXTRA_CA_CERTS say)
    env = {**os.environ, "PEERS": str(folder), "CONFORMANCE_PKG": f"{PACKAGE}@{VERSION}"}
    ran = subprocess.run(["bash", str(REPO / "scripts" / "peers.sh")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=540, check=False)
    assert ran.returncode == 0, f"scripts/peers.sh failed:\n{ran.stdout}{ran.stderr}"
    package = folder / "node_modules" / PACKAGE
    installed = json.loads((package / "package.json").read_text())["version"]
    assert installed == VERSION, f"{package} holds {installed}, not {VERSION}: remove {folder}"
    return folder / "bin" / "node", package / "dist" / "index.js"


def isolated(command: list[str]) -> list[str]:
    """The suite's mock servers listen on every interface: a private network when possible."""
    if shutil.which("unshare") and shutil.which("ip"):
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["unshare", "-n", "bash", "-c", 'ip link set lo up && exec "$@"', "bash", *command]
    return command


@pytest.fixture(scope="module")
def outcomes(suite: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each scenario's suite output, three at a time (each is mostly waiting; more at once
    starve each other on two busy cores)."""
    node, index = suite
    client = f"{sys.executable} {REPO / 'examples' / 'conformance_client.py'}"

    def run(scenario: str) -> str:
        folder = tmp_path_factory.mktemp(scenario.replace("/", "_"))
        command = [str(node), str(index), "client", "--command", client, "--scenario", scenario,
                   "--timeout", "60000", "-o", str(folder)]
        ran = subprocess.run(isolated(command), cwd=folder, capture_output=True, text=True,
                             timeout=180, check=False)
        return f"exit {ran.returncode}\n{ran.stdout}{ran.stderr}"

    with ThreadPoolExecutor(3) as pool:
        return dict(zip(SCENARIOS, pool.map(run, SCENARIOS), strict=True))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_auth_extension_scenario_passes(scenario: str, outcomes: dict[str, str]) -> None:
    output = outcomes[scenario]
    failed = [line for line in output.splitlines() if "FAILURE" in line or "WARNING" in line]
    assert output.startswith("exit 0\n") and "OVERALL: PASSED" in output, (
        f"{scenario} did not pass:\n" + "\n".join(failed or output.splitlines()[-30:])
    )
    totals = re.search(r"Passed: (\d+)/(\d+), 0 failed, 0 warnings", output)
    assert totals and totals.group(1) == totals.group(2), output[-2000:]
