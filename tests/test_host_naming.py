"""The host's naming rule at its edges (``runtime/typedmcp/host/naming.py`` and
``Registry.build``): names of exactly 64 and 65 characters, collisions under every order of
the servers, and a tool and a prompt of one server that share a name. The expected names
are worked out here from the rule's text (SHA-256 suffixes), not by the code under test."""

from __future__ import annotations

import hashlib
import itertools
from typing import Any

import pytest

from typedmcp.host import Registry, parse_config, valid_function_name
from typedmcp.host.naming import MAX_NAME, Candidate, NamingRule, assign, shorten
from typedmcp.host.registry import ServerLists


def suffixed(name: str, seed: str) -> str:
    """The rule's suffix: the name's first 55 characters, ``_``, 8 hex digits of the
    SHA-256 of ``seed``."""
    return f"{name[:55]}_{hashlib.sha256(seed.encode()).hexdigest()[:8]}"


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "inputSchema": {"type": "object"}} for name in names]


def build(servers: dict[str, ServerLists], entries: dict[str, dict[str, Any]] | None = None,
          **host: Any) -> Registry:
    """The registry of ``servers`` in the given order (``entries``: extra keys per server)."""
    raw = {name: {"command": "x", **(entries or {}).get(name, {})} for name in servers}
    config = parse_config({"mcpServers": raw, "host": host})
    rule = NamingRule(config.separator, config.prefix_tools)
    return Registry.build([(config.servers[name], lists) for name, lists in servers.items()], rule)


def exported(registry: Registry) -> dict[tuple[str, str], str]:
    """(server, original tool name) -> exported name."""
    return {(entry.server, entry.tool): name for name, entry in registry.tools.items()}


@pytest.mark.parametrize("length", [MAX_NAME - 1, MAX_NAME, MAX_NAME + 1, MAX_NAME + 2])
def test_a_name_of_64_characters_is_kept_and_one_of_65_is_shortened(length: int) -> None:
    original = "t" * (length - len("s__"))
    full = f"s__{original}"
    assert len(full) == length
    expected = full if length <= 64 else suffixed(full, full)
    assert shorten(full) == expected
    registry = build({"s": ServerLists(tools=tools(original))})
    assert list(registry.tools) == [expected]
    assert len(expected) == min(length, 64) and valid_function_name(expected)
    assert valid_function_name(full) is (length <= 64)


SERVERS = ("x", "y", "z")


@pytest.mark.parametrize("order", list(itertools.permutations(SERVERS)), ids="-".join)
def test_every_colliding_name_gets_its_suffix_in_every_server_order(order: tuple[str, ...]) -> None:
    """Three originals that differ only in replaced characters (collisions rule: each is
    one server's own, so unprefixed) all become ``a_b``; three servers given one prefix
    export the same ``search``. Every one of them is suffixed (none keeps the bare name),
    each with the hash of its own ``server/original``, whatever the servers' order."""
    originals = {"x": "a.b", "y": "a_b", "z": "a b"}
    lists = {name: ServerLists(tools=tools(originals[name], "search", f"own_{name}")) for name in order}
    one_prefix = {name: {"prefix": "p"} for name in order}
    registry = build(lists, one_prefix, prefixTools="collisions")
    expected = {(name, originals[name]): suffixed("a_b", f"{name}/{originals[name]}") for name in SERVERS}
    expected |= {(name, "search"): suffixed("p__search", f"{name}/search") for name in SERVERS}
    expected |= {(name, f"own_{name}"): f"own_{name}" for name in SERVERS}
    assert exported(registry) == expected
    always = build({name: ServerLists(tools=tools("search")) for name in order}, one_prefix)
    assert exported(always) == {(name, "search"): suffixed("p__search", f"{name}/search") for name in SERVERS}


def test_collisions_are_suffixed_when_assigned_directly_in_any_order() -> None:
    candidates = [Candidate(server, "", "t.x") for server in SERVERS]
    for order in itertools.permutations(candidates):
        names = assign(order, NamingRule(prefix_tools="collisions"))
        assert names == [suffixed("t_x", f"{c.server}/t.x") for c in order]


def test_a_tool_and_a_prompt_may_share_a_name() -> None:
    """Tools and prompts are named apart: a prompt named like a tool of its server is
    exported (under the same name), and a collision among the tools does not suffix a
    prompt's name."""
    lists = ServerLists(tools=tools("greet", "a.b", "a_b"), prompts=[{"name": "greet"}, {"name": "a.b"}])
    registry = build({"s": lists})
    assert "s__greet" in registry.tools and "s__greet" in registry.prompts
    assert registry.prompts["s__greet"].prompt == "greet"
    assert "s__a_b" in registry.prompts and registry.prompts["s__a_b"].prompt == "a.b"
    assert "s__a_b" not in registry.tools and len(registry.tools) == 3
    assert sorted(registry.prompts) == ["s__a_b", "s__greet"]
