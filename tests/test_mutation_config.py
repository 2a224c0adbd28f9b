"""The mutation-testing configuration stays valid (scripts/mutation.sh, not run by CI).

Cheap checks only, no mutation run: every config in ``scripts/mutation/`` names a module,
functions and tests that exist, the security-critical and typed-tools modules each have one, and CI does
not run the script.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import REPO_ROOT

CONFIGS = sorted((REPO_ROOT / "scripts" / "mutation").glob("*.toml"))

#: The security-critical modules that mutation testing covers (issue 23).
COVERED = {
    "runtime/typedmcp/state/sessions.py",
    "runtime/typedmcp/state/tasks.py",
    "runtime/typedmcp/protocol/tasks.py",
    "runtime/typedmcp/stateless/sealing.py",
    "runtime/typedmcp/state/keys.py",
    "runtime/typedmcp/host/parking.py",
    "runtime/typedmcp/auth/discovery.py",
    "runtime/typedmcp/auth/oauth.py",
    "runtime/typedmcp/auth/tokens.py",
    "runtime/typedmcp/transports/http_aiohttp.py",
    "runtime/typedmcp/transports/http_client.py",
    # the token verifiers and scopes (issue 20)
    "runtime/typedmcp/auth/jwt.py",
    "runtime/typedmcp/protocol/access.py",
    "runtime/typedmcp/transports/access_gate.py",
    "runtime/typedmcp/auth/introspection.py",
    "runtime/typedmcp/auth/verifiers.py",
    "runtime/typedmcp/auth/env.py",
    "runtime/typedmcp/transports/http_auth.py",
    "runtime/typedmcp/protocol/middleware_builtin.py",
    "runtime/typedmcp/state/rate_limit.py",
    # a peer's JSON: numbers too large for a float (issue 29)
    "runtime/typedmcp/engine/peer_json.py",
    # the request limits: a batch's length, the requests in flight (issue 29)
    "runtime/typedmcp/engine/jsonrpc.py",
    # what the gateway relays and the HTTP client reads from peers (issue 29)
    "runtime/typedmcp/host/splice.py",
    "runtime/typedmcp/transports/http_wire.py",
    # search mode: what a caller may find, describe and call (issue 32)
    "runtime/typedmcp/host/discovery.py",
    # code mode: the stubs the code is type-checked against (issue 32)
    "runtime/typedmcp/host/codemode/stubs.py",
}

#: The typed-tools layer and the tool-client generator's drift comparison (issue 23,
#: requirement 4: this round's modules).
TYPED_TOOLS = {
    "runtime/typedmcp/app/signature.py",
    "runtime/typedmcp/app/tools.py",
    "runtime/typedmcp/app/docstrings.py",
    "runtime/typedmcp/app/resources.py",
    "runtime/typedmcp/app/completions.py",
    "codegen/typedmcp_codegen/tools_diff.py",
}

#: The generator's one escaping path for outside text and the tool module names (issue 29).
UNTRUSTED_TEXT = {
    "codegen/typedmcp_codegen/escape.py",
    "codegen/typedmcp_codegen/toolset.py",
}

#: Composition and the developer commands (issue 30): the scopes a mount copies, and the
#: client configurations ``mcp-host install`` must never clobber.
COMPOSITION = {
    "runtime/typedmcp/app/mount.py",
    "runtime/typedmcp/cli/install.py",
}


def scope_module() -> ModuleType:
    path = REPO_ROOT / "scripts" / "mutation_scope.py"
    spec = importlib.util.spec_from_file_location("mutation_scope", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutation_scope", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("config", CONFIGS, ids=[config.stem for config in CONFIGS])
def test_each_config_names_a_module_functions_and_tests_that_exist(config: Path) -> None:
    scope = scope_module()
    module_file, spans = scope.selected_lines(REPO_ROOT, config)
    assert module_file.is_file() and spans


def test_every_security_critical_and_typed_tools_module_has_a_config() -> None:
    scope = scope_module()
    configured = {str(scope.load_scope(config)[0]) for config in CONFIGS}
    assert configured == COVERED | TYPED_TOOLS | UNTRUSTED_TEXT | COMPOSITION


def test_a_config_naming_a_missing_function_or_test_is_refused_with_what_to_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = scope_module()
    sealing = (REPO_ROOT / "scripts" / "mutation" / "sealing.toml").read_text("utf-8")
    no_function = tmp_path / "no_function.toml"
    no_function.write_text(sealing.replace('"StateSealer.open"', '"StateSealer.opened"'), "utf-8")
    no_test = tmp_path / "no_test.toml"
    no_test.write_text(sealing.replace("::test_a_single_use_state_is_accepted_once",
                                       "::test_gone"), "utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO_ROOT)
        assert scope.main(["--check", str(no_function)]) == 1
        assert scope.main(["--check", str(no_test)]) == 1
    errors = capsys.readouterr().err
    assert "has no function StateSealer.opened; update the functions list" in errors
    assert "tests/test_hardening_stateless.py has no test test_gone; update the test-command" in errors


def test_only_swaps_that_change_a_decision_run() -> None:
    kept = scope_module().operator_kept
    assert kept("core/ReplaceComparisonOperator_Lt_LtE")
    assert kept("core/ReplaceComparisonOperator_Eq_NotEq")
    assert not kept("core/ReplaceComparisonOperator_Lt_Is")
    assert kept("core/ReplaceBinaryOperator_Add_Sub")
    assert not kept("core/ReplaceBinaryOperator_Add_Pow")
    assert kept("core/AddNot") and kept("core/NumberReplacer")


def test_ci_does_not_run_mutation_testing() -> None:
    assert "mutation" not in (REPO_ROOT / ".ci" / "run").read_text("utf-8")


def test_annotations_are_outside_the_mutated_code() -> None:
    """``from __future__ import annotations``: an annotation is never evaluated, so a mutant
    of its ``|`` would survive without any behaviour to change."""
    spans = scope_module().annotation_spans(
        "def f(x: int | None, *, y: str = '') -> str | None:\n"
        "    z: int | None = x\n"
        "    return str(x | 1)\n"
    )
    inside = lambda line, column: any(s <= (line, column) < e for s, e in spans)  # noqa: E731
    assert inside(1, 13) and inside(1, 44) and inside(2, 11)  # each "|" of an annotation
    assert not inside(3, 17)  # the "|" of the body
