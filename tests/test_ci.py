"""CI runs what the README tells a contributor to run, and a failure anywhere fails it.

``.ci/readme_commands.py`` runs the commands of the README's first ``bash`` block verbatim,
in a fresh clone alone in an empty folder; ``.ci/quiet.py`` runs one command without pip's
"WARNING: Location ... is ignored" lines and keeps its exit status. Both are exercised as real
subprocesses on throwaway READMEs (and a throwaway repository); the tests find the official
schemas with no ``MCP_CODEGEN_SCHEMA_DIR`` (the repository's ``schema/``) or a relative one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, official_spec_dir

QUIET = REPO_ROOT / ".ci" / "quiet.py"
README_COMMANDS = REPO_ROOT / ".ci" / "readme_commands.py"
LOCATION_WARNING = (
    "WARNING: Location '/nowhere/simple' is ignored: it is either a non-existing path or lacks "
    "a specific scheme."
)


def run(*args: str | Path, cwd: Path = REPO_ROOT, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )


def readme(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "README.md"
    path.write_text(text, "utf-8")
    return path


# -- the README's test command, exactly as written ------------------------------------------


SCHEMA_TESTS = (
    "tests/test_cli.py::test_sha256_mismatch",  # changes directory
    "tests/test_cli.py::test_latest_resolves_to_2026_07_28",
    "tests/test_cli.py::test_a_changed_draft_generates_with_a_notice",  # the vendored draft
)


def test_the_tests_find_the_official_schemas_with_no_schema_dir_set() -> None:
    """The README's test command names no folder: the tests read the repository's schema/."""
    environment = {k: v for k, v in os.environ.items() if k != "MCP_CODEGEN_SCHEMA_DIR"}
    result = run(
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SCHEMA_TESTS,
        env=environment, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 passed" in result.stdout


def test_a_relative_schema_dir_is_read_against_the_folder_pytest_started_in() -> None:
    """``MCP_CODEGEN_SCHEMA_DIR=<relative> pytest``: the tests that change directory (the
    CLI's, in a temporary folder) must still find the schemas."""
    relative = os.path.relpath(official_spec_dir(), REPO_ROOT)
    assert not os.path.isabs(relative)
    environment = {**os.environ, "MCP_CODEGEN_SCHEMA_DIR": relative}
    result = run(
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SCHEMA_TESTS,
        env=environment, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 passed" in result.stdout


def test_the_readme_setup_block_holds_the_two_commands_ci_runs() -> None:
    result = run(sys.executable, README_COMMANDS, "--list")
    assert result.returncode == 0, result.stderr
    commands = result.stdout.splitlines()
    assert len(commands) == 2, commands
    install, tests = commands
    assert install.startswith("{ { command -v redis-server && command -v haproxy; }")
    assert "apt-get install -y -q redis-server haproxy; }; } && python3 -m venv .venv && " in install
    assert "&& .venv/bin/pip install -e ./runtime -e '.[dev]' &&" in install
    assert install.endswith("&& .venv/bin/mcp-codegen --all")
    assert tests == ".venv/bin/pytest -n auto --dist loadfile"
    # no folder outside the repository: a clone with nothing beside it runs them
    for command in commands:
        assert "../" not in command and "MCP_CODEGEN_SCHEMA_DIR" not in command, command


def test_ci_runs_the_readme_commands_in_a_fresh_clone_with_no_schema_dir() -> None:
    """.ci/run names no schema folder (the repository has its own) and runs the README's
    commands as a new user would, in a fresh clone (no ``--in-place``)."""
    script = (REPO_ROOT / ".ci" / "run").read_text()
    assert "MCP_CODEGEN_SCHEMA_DIR" not in script and "shared" not in script
    runs = [line.strip() for line in script.splitlines() if line.startswith("python3 .ci/readme_commands.py")]
    assert runs == ["python3 .ci/readme_commands.py"]


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", *args],
        cwd=cwd, check=True, capture_output=True, timeout=60,
    )


def test_readme_commands_run_in_a_fresh_clone_of_head_alone_in_an_empty_folder(tmp_path: Path) -> None:
    """The committed README's commands run in a clone of the HEAD commit, which has no
    sibling folder, no uncommitted file and no ``MCP_CODEGEN_SCHEMA_DIR``; the clone is
    removed after success."""
    repository = tmp_path / "project"
    repository.mkdir()
    (tmp_path / "shared").mkdir()  # a sibling the clone must not see
    seen = tmp_path / "seen"
    seen.mkdir()
    readme(repository, (
        "```bash\n"
        f"echo \"$PWD\" > {seen}/where.txt && ls -A .. > {seen}/siblings.txt\n"
        f"ls > {seen}/files.txt && echo \"${{MCP_CODEGEN_SCHEMA_DIR-unset}}\" > {seen}/schema_dir.txt\n"
        "```\n"
    ))
    (repository / "committed.txt").write_text("in the commit\n")
    git("init", "-q", cwd=repository)
    git("add", "-A", cwd=repository)
    git("commit", "-q", "-m", "first", cwd=repository)
    (repository / "uncommitted.txt").write_text("only in the working tree\n")
    (repository / "README.md").write_text("```bash\ntouch " + str(seen / "working-tree-readme-ran") + "\n```\n")
    environment = {**os.environ, "MCP_CODEGEN_SCHEMA_DIR": str(tmp_path / "shared")}
    result = run(sys.executable, README_COMMANDS, "--readme", repository / "README.md", env=environment)
    assert result.returncode == 0, result.stdout + result.stderr
    where = Path((seen / "where.txt").read_text().strip())
    assert where.name == "project" and where != repository
    assert (seen / "siblings.txt").read_text().split() == ["project"]  # alone in its folder
    assert (seen / "files.txt").read_text().split() == ["README.md", "committed.txt"]
    assert (seen / "schema_dir.txt").read_text().strip() == "unset"
    assert not (seen / "working-tree-readme-ran").exists()  # the commit's README ran
    assert not where.exists() and not where.parent.exists()  # removed after success


def test_readme_commands_keep_a_failed_clone_and_refuse_a_readme_outside_git(tmp_path: Path) -> None:
    repository = tmp_path / "project"
    repository.mkdir()
    readme(repository, "```bash\nexit 4\n```\n")
    outside = run(sys.executable, README_COMMANDS, "--readme", repository / "README.md")
    assert outside.returncode == 1
    assert "not in a git repository" in outside.stderr and "--in-place" in outside.stderr
    git("init", "-q", cwd=repository)
    git("add", "-A", cwd=repository)
    git("commit", "-q", "-m", "first", cwd=repository)
    failed = run(sys.executable, README_COMMANDS, "--readme", repository / "README.md")
    assert failed.returncode == 4
    kept = Path(failed.stderr.split("the clone is kept for a look: ")[1].split()[0])
    assert (kept / "README.md").is_file() and kept != repository
    shutil.rmtree(kept.parent)


# -- .ci/readme_commands.py -------------------------------------------------------------------


def test_readme_commands_run_verbatim_in_order_from_the_readme_folder(tmp_path: Path) -> None:
    path = readme(tmp_path, (
        "# demo\n\nSome text.\n\n```bash\n"
        "# 1. a comment line is not a command\n"
        "echo first > order.txt && echo \"$PWD\" > where.txt\n"
        "\n"
        "GREETING=hello sh -c 'echo \"$GREETING\" >> order.txt'\n"
        "```\n\n```bash\necho later blocks are not run > later.txt\n```\n"
    ))
    result = run(sys.executable, README_COMMANDS, "--in-place", "--readme", path, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "order.txt").read_text() == "first\nhello\n"
    assert (tmp_path / "where.txt").read_text().strip() == str(tmp_path)
    assert not (tmp_path / "later.txt").exists()
    assert "$ echo first > order.txt" in result.stdout  # each command is shown before it runs


def test_readme_commands_fail_without_a_bash_block(tmp_path: Path) -> None:
    path = readme(tmp_path, "# demo\n\n```sh\necho not bash\n```\n")
    result = run(sys.executable, README_COMMANDS, "--in-place", "--readme", path)
    assert result.returncode != 0
    assert "no ```bash block" in result.stderr and str(path) in result.stderr


def test_readme_commands_fail_on_an_empty_bash_block(tmp_path: Path) -> None:
    path = readme(tmp_path, "```bash\n# only a comment\n```\n")
    result = run(sys.executable, README_COMMANDS, "--in-place", "--readme", path)
    assert result.returncode != 0
    assert "no command" in result.stderr


def test_readme_commands_fail_on_an_unclosed_bash_block(tmp_path: Path) -> None:
    path = readme(tmp_path, "```bash\necho one\n")
    result = run(sys.executable, README_COMMANDS, "--in-place", "--readme", path)
    assert result.returncode != 0
    assert "not closed" in result.stderr


def test_a_failing_readme_command_fails_the_run_and_stops_it(tmp_path: Path) -> None:
    path = readme(tmp_path, "```bash\nfalse && echo never\necho after > after.txt\n```\n")
    result = run(sys.executable, README_COMMANDS, "--in-place", "--readme", path)
    assert result.returncode == 1
    assert "failed (exit 1): false && echo never" in result.stderr
    assert not (tmp_path / "after.txt").exists()


def test_a_readme_command_failing_inside_a_pipe_fails_the_run(tmp_path: Path) -> None:
    path = readme(tmp_path, "```bash\nexit 3 | cat\n```\n")
    result = run(sys.executable, README_COMMANDS, "--in-place", "--readme", path)
    assert result.returncode == 3


# -- .ci/quiet.py -----------------------------------------------------------------------------


def test_quiet_drops_pip_location_warnings_and_keeps_the_rest() -> None:
    script = f"print({LOCATION_WARNING!r}); print('Successfully installed thing-1.0')"
    result = run(sys.executable, QUIET, sys.executable, "-c", script)
    assert result.returncode == 0
    assert result.stdout == "Successfully installed thing-1.0\n"


def test_quiet_keeps_the_exit_status_when_every_line_is_filtered() -> None:
    """The old ``pip ... | grep -v '^WARNING: Location' || true`` turned this into success."""
    script = f"import sys; print({LOCATION_WARNING!r}); sys.exit(1)"
    result = run(sys.executable, QUIET, sys.executable, "-c", script)
    assert result.returncode == 1
    assert result.stdout == ""


def test_quiet_keeps_the_exit_status_of_a_failed_install() -> None:
    result = run(
        sys.executable, QUIET, sys.executable, "-m", "pip", "install", "-q", "--no-index",
        "--disable-pip-version-check", "mcp-codegen-no-such-package-for-the-ci-test",
    )
    assert result.returncode != 0
    assert "No matching distribution" in result.stdout


def test_quiet_reports_a_missing_program() -> None:
    result = run(sys.executable, QUIET, "/nonexistent/pip")
    assert result.returncode == 127
    assert "/nonexistent/pip" in result.stderr


def test_ci_scripts_do_not_turn_a_failed_install_into_success() -> None:
    """No pip line in the CI scripts ends its pipe in ``|| true`` (or ``|| :``)."""
    for script in (".ci/run", "scripts/peers.sh", "scripts/conformance.sh"):
        for number, line in enumerate((REPO_ROOT / script).read_text().splitlines(), 1):
            if "pip" in line and "install" in line:
                assert "|| true" not in line and "|| :" not in line, f"{script}:{number}: {line}"


def test_ci_builds_the_documentation_strictly() -> None:
    """.ci/run installs the ``docs`` extra and runs ``mkdocs build --strict`` outside the
    tree, never with ``--quiet`` (which hides the warnings ``--strict`` counts: a broken link
    would pass); the extra pins mkdocs, Material and mkdocstrings to a major version."""
    script = (REPO_ROOT / ".ci" / "run").read_text()
    install = script.index("pip install -q -e '.[docs]'")
    build = next(line for line in script.splitlines() if ".venv/bin/mkdocs build" in line)
    assert script.index(build) > install > script.index(".venv/bin/ruff check .")
    assert "--strict" in build and "--site-dir" in build and "--quiet" not in build and " -q" not in build
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    for pin in ('"mkdocs>=1.6,<2"', '"mkdocs-material>=9.5,<10"', '"mkdocstrings[python]>=1.0,<2"'):
        assert pin in pyproject
    assert "site/" in (REPO_ROOT / ".gitignore").read_text().splitlines()


# -- scripts/conformance.sh: flaky client scenarios -------------------------------------------

FAKE_HARNESS = """#!/usr/bin/env bash
# A stand-in for `node <suite>`: $FAKE_PARALLEL_FAILS fail in `client --suite all`,
# $FAKE_ALONE_FAILS fail again in `client --scenario NAME`; the server suite passes.
shift  # the suite's path
mode=$1; shift
if [ "$mode" = server ]; then echo "Total: 3 passed, 0 failed"; exit 0; fi
scenario=""
while [ $# -gt 0 ]; do
  if [ "$1" = --scenario ]; then scenario=$2; fi
  shift
done
if [ -z "$scenario" ]; then
  echo "✓ initialize: passed"
  for name in $FAKE_PARALLEL_FAILS; do echo "✗ $name: timed out"; done
  echo "Total: 1 passed, $(echo $FAKE_PARALLEL_FAILS | wc -w) failed"
  [ -z "$FAKE_PARALLEL_FAILS" ]; exit $?
fi
for name in $FAKE_ALONE_FAILS; do [ "$name" = "$scenario" ] && exit 1; done
exit 0
"""


def conformance(tmp_path: Path, parallel_fails: str, alone_fails: str = "",
                max_flaky: str | None = None, log_calls: str = "") -> subprocess.CompletedProcess[str]:
    """scripts/conformance.sh with the fake harness; our server and client are real.
    ``log_calls``: shell lines the fake harness runs first (to record its arguments)."""
    harness = tmp_path / "fake-node"
    harness.write_text(FAKE_HARNESS.replace("shift  # the suite's path", log_calls + "shift  # the suite's path"))
    harness.chmod(0o755)
    environment = {
        **os.environ,
        "CONFORMANCE_NODE": str(harness),
        "CONFORMANCE_SUITE": str(tmp_path / "index.js"),
        "OUT": str(tmp_path / "results"),
        "FAKE_PARALLEL_FAILS": parallel_fails,
        "FAKE_ALONE_FAILS": alone_fails,
    }
    if max_flaky is not None:
        environment["CONFORMANCE_MAX_FLAKY"] = max_flaky
    return run("bash", "scripts/conformance.sh", sys.executable, env=environment, timeout=120)


def test_conformance_names_and_counts_a_scenario_that_passes_alone(tmp_path: Path) -> None:
    result = conformance(tmp_path, parallel_fails="sse-retry", max_flaky="4")
    assert result.returncode == 0, result.stdout + result.stderr
    flaky = "FLAKY: sse-retry failed in the parallel suite, passed alone"
    assert result.stdout.count(flaky) == 4  # once per client suite (every scenario, each era)
    assert "flaky client scenarios (failed in the parallel suite, passed alone): 4 of at most 4" in result.stdout
    assert (tmp_path / "results" / "flaky.txt").read_text().splitlines() == [
        "sse-retry (spec-version all)",
        "sse-retry (spec-version 2026-07-28)",
        "sse-retry (spec-version 2025-11-25)",
        "sse-retry (spec-version 2025-06-18)",
    ]


def test_conformance_runs_every_scenario_and_each_era(tmp_path: Path) -> None:
    """The server and the client suites run with no --spec-version filter (the extension
    scenarios; their own expected-failures file) and at each era: what the harness was
    asked is logged by the fake harness."""
    calls = tmp_path / "calls.txt"
    harness_log = f'echo "$*" >> {calls}\n'
    result = conformance(tmp_path, parallel_fails="", log_calls=harness_log)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = calls.read_text().splitlines()
    for mode in ("server", "client"):
        runs = [line for line in lines if line.split()[1] == mode]
        unfiltered = [line for line in runs if "--spec-version" not in line]
        assert unfiltered and all(
            "--suite all" in line and "conformance/expected-failures-all.yml" in line
            for line in unfiltered
        ), runs
        for version in ("2026-07-28", "2025-11-25", "2025-06-18"):
            assert any(f"--suite all --spec-version {version}" in line for line in runs), (mode, version)


def test_conformance_fails_on_a_scenario_that_fails_alone_too(tmp_path: Path) -> None:
    result = conformance(tmp_path, parallel_fails="sse-retry", alone_fails="sse-retry")
    assert result.returncode == 1
    assert "FAILED: sse-retry (spec-version 2025-11-25): failed in the parallel suite and alone" in result.stdout
    assert "FLAKY" not in result.stdout.replace("flaky client scenarios", "")


def test_conformance_fails_on_more_flaky_scenarios_than_the_bound(tmp_path: Path) -> None:
    result = conformance(tmp_path, parallel_fails="sse-retry initialize", max_flaky="7")
    assert result.returncode == 1
    assert "8 of at most 7" in result.stdout  # two scenarios in each of the four client suites
    assert "FAILED: 8 flaky scenarios, more than CONFORMANCE_MAX_FLAKY=7" in result.stdout


def test_conformance_passes_clean_runs_with_no_flaky_scenario(tmp_path: Path) -> None:
    result = conformance(tmp_path, parallel_fails="")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed alone): 0 of at most 2" in result.stdout
    assert (tmp_path / "results" / "flaky.txt").read_text() == ""
