"""The host's configuration, naming rule, registry and function-calling export (no I/O)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from typedmcp.host import ConfigError, Registry, load_config, parse_config, valid_function_name
from typedmcp.host.config import ServerConfig, parse_server
from typedmcp.host.naming import NamingRule, possible_owners, sanitize, shorten
from typedmcp.host.registry import ServerLists, function_definitions, template_pattern

ENV = {"TOKEN": "s3cret", "HOME": "/home/u"}


def test_desktop_config_file_with_every_transport(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({
        "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server", "${HOME}/x"], "env": {"T": "${TOKEN}"}, "cwd": "/tmp"},
            "search": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
            "typed": {"type": "streamable-http", "url": "http://localhost:8000/mcp"},
            "off": {"command": "x", "disabled": True},
        },
        "globalShortcut": "ignored: other keys of a desktop host's file are left alone",
    }))
    config = load_config(path, ENV)
    files = config.servers["files"]
    assert files.transport == "stdio"
    assert files.command == ("npx", "-y", "server", "/home/u/x")
    assert dict(files.env) == {"T": "s3cret"} and files.cwd == "/tmp"
    assert config.servers["search"].transport == "http"
    assert dict(config.servers["search"].headers) == {"Authorization": "Bearer s3cret"}
    assert config.servers["legacy"].transport == "sse"
    assert config.servers["typed"].transport == "http"
    assert config.servers["off"].disabled
    assert list(config.servers) == ["files", "search", "legacy", "typed", "off"]


def test_plain_dict_and_defaults_and_escapes() -> None:
    config = parse_config({"a": {"command": "run", "args": ["$$HOME", "${NOPE:-fallback}"]}}, ENV)
    assert config.servers["a"].command == ("run", "$HOME", "fallback")
    assert config.separator == "__" and config.prefix_tools == "always"


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        ({"command": "x", "comand": "y"}, "comand", "unknown key"),
        ({"args": ["x"]}, "command", "missing"),
        ({"type": "stdio"}, "command", "missing"),
        ({"type": "http"}, "url", "missing"),
        ({"url": "ftp://example.com/mcp"}, "url", "not an http(s) URL"),
        ({"url": "http:///mcp"}, "url", "not an http(s) URL"),
        ({"command": "x", "env": {"K": "${UNSET_VARIABLE}"}}, "env.K", "UNSET_VARIABLE is not set"),
        ({"command": "x", "args": "not a list"}, "args", "list of strings"),
        ({"command": "x", "timeout": 0}, "timeout", "positive number"),
        ({"command": "x", "type": "websocket"}, "type", "stdio, http or sse"),
        ({"url": "http://h/mcp", "command": "x"}, "url", "takes command/args"),
        ({"command": "x", "protocol": "latest"}, "protocol", "auto or a revision"),
        ({"command": "x", "disabled": "yes"}, "disabled", "true or false"),
    ],
)
def test_a_bad_entry_is_an_error_naming_the_server_and_the_field(
    entry: dict[str, Any], field: str, words: str | None
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcpServers": {"srv": entry}}, ENV)
    message = str(caught.value)
    assert "server 'srv'" in message and f"field {field!r}" in message
    assert caught.value.server == "srv" and caught.value.key == field
    if words:
        assert words in message


def test_bad_files_and_host_options(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    with pytest.raises(ConfigError, match=r"not valid JSON \(line 1"):
        load_config(broken)
    with pytest.raises(ConfigError, match=r"host\.separator"):
        parse_config({"mcpServers": {}, "host": {"separator": "::"}})
    with pytest.raises(ConfigError, match=r"host\.colour"):
        parse_config({"mcpServers": {}, "host": {"colour": 1}})
    with pytest.raises(ConfigError, match="server 'bad name'"):
        parse_config({"mcpServers": {"bad name": {"command": "x"}}})


@pytest.mark.parametrize(
    ("document", "key", "expected"),
    [
        ({"mcpServer": {"a": {"command": "x"}}}, "mcpServer", "mcpServers"),
        ({"mcp_servers": {"a": {"command": "x"}}}, "mcp_servers", "mcpServers"),
        ({"server": {"a": {"command": "x"}}}, "server", "servers"),
        ({"servers": {"a": {"command": "x"}}, "hosts": {"separator": "-"}}, "hosts", "host"),
        ({"mcpServers": {"a": {"command": "x"}}, "mcpServerz": {}}, "mcpServerz", "mcpServers"),
        ({"settings": {"a": {"command": "x"}}}, "settings", None),
    ],
)
def test_a_file_with_a_misspelt_top_level_key_is_refused_naming_it(
    tmp_path: Path, document: dict[str, Any], key: str, expected: str | None
) -> None:
    """Not taken for a server named after the misspelling: the key, the key it is closest
    to, and the file."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert caught.value.server is None and caught.value.key == key
    assert message.startswith(f"the configuration, field {key!r}: unknown top-level key (")
    if expected is not None:
        assert f"did you mean {expected!r}?" in message
    else:
        assert "did you mean" not in message
    assert message.endswith(f" (in {path})") and caught.value.path == str(path)


def test_a_file_without_servers_and_a_mapping_that_misspells_them(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    with pytest.raises(ConfigError, match=r'no "mcpServers" object.*\(in .*empty\.json\)$'):
        load_config(empty)
    with pytest.raises(ConfigError, match="did you mean 'mcpServers'"):
        parse_config({"mcpServer": {"a": {"command": "x"}}})
    # a plain mapping's server may be called anything, even "server"
    assert list(parse_config({"server": {"command": "x"}}).servers) == ["server"]


def test_an_unknown_entry_key_names_the_closest_accepted_one(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"srv": {"comand": "x"}}}))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(
        "server 'srv', field 'comand': unknown key (did you mean 'command'? accepted: command, args,"
    )
    assert str(caught.value).endswith(f" (in {path})")
    with pytest.raises(ConfigError, match=r"host\.maxBackof.*did you mean 'maxBackoff'"):
        parse_config({"mcpServers": {}, "host": {"maxBackof": 3}})


# -- naming ----------------------------------------------------------------------------------


def lists(*tools: str) -> ServerLists:
    return ServerLists(tools=[{"name": t, "inputSchema": {"type": "object"}} for t in tools])


def test_possible_owners_follow_the_naming_rule() -> None:
    """Whatever name the registry gives a tool, its server is among the servers the rule
    alone names for it (so ``mcp-host call`` may start only those)."""
    rule = NamingRule()
    prefixes = {"weather": "weather", "my.srv": "my.srv", "a": "a", "a__b": "a__b", "9lives": "9lives",
                "custom": "cu", "long" * 14: "long" * 14, "bare": ""}
    servers = [
        (ServerConfig(name=name, transport="stdio", command=("x",), prefix=None if prefix == name else prefix),
         lists("current", "b__x", "x", "tool.with.dots", "t" * 70))
        for name, prefix in prefixes.items()
    ]
    registry = Registry.build(servers, rule)
    assert len(registry.tools) == 5 * len(prefixes)
    for entry in registry.tools.values():
        owners = possible_owners(entry.name, prefixes, rule)
        assert owners is not None and entry.server in owners, (entry, owners)
        assert "bare" in owners  # an empty prefix could export any name
    assert possible_owners("weather__current", prefixes, rule) == ["weather", "bare"]
    assert possible_owners("my_srv__x", prefixes, rule) == ["my.srv", "bare"]
    assert possible_owners("a__b__x", prefixes, rule) == ["a", "a__b", "bare"]
    assert possible_owners("_9lives__x", prefixes, rule) == ["9lives", "bare"]
    assert possible_owners("cu__x", prefixes, rule) == ["custom", "bare"]
    del prefixes["bare"]
    assert possible_owners("nobody__x", prefixes, rule) == []
    assert possible_owners("weather-x", prefixes, NamingRule(separator="-")) == ["weather"]
    assert possible_owners("current", prefixes, NamingRule(prefix_tools="collisions")) is None


def build(servers: dict[str, ServerLists], **host: Any) -> Registry:
    config = parse_config({"mcpServers": {name: {"command": "x"} for name in servers}, "host": host})
    rule = NamingRule(config.separator, config.prefix_tools)
    return Registry.build([(config.servers[name], lists_) for name, lists_ in servers.items()], rule)


def test_default_rule_prefixes_every_tool_with_its_server() -> None:
    registry = build({"weather": lists("current", "search"), "web": lists("search")})
    assert sorted(registry.tools) == ["weather__current", "weather__search", "web__search"]
    entry = registry.tools["web__search"]
    assert (entry.server, entry.tool) == ("web", "search")
    assert registry.collisions == {"search": ["weather", "web"]}


def test_collision_rule_prefixes_only_shared_names_and_separator_is_configurable() -> None:
    registry = build({"weather": lists("current", "search"), "web": lists("search")},
                     prefixTools="collisions", separator="-")
    assert sorted(registry.tools) == ["current", "weather-search", "web-search"]


def test_names_are_valid_for_llm_apis_and_long_names_shorten_deterministically() -> None:
    long_name = "a" * 80
    odd = ["dots.and spaces", "émoji🙂", "9starts_with_digit", long_name, "x" * 63 + "_y"]
    registry = build({"srv": lists(*odd), "other": lists(long_name)})
    assert all(valid_function_name(name) and len(name) <= 64 for name in registry.tools)
    assert len(registry.tools) == len(odd) + 1
    again = build({"srv": lists(*odd), "other": lists(long_name)})
    assert list(registry.tools) == list(again.tools)  # deterministic
    assert shorten("b" * 70) == shorten("b" * 70) and len(shorten("b" * 70)) == 64
    assert sanitize("a.b") == "a_b" and sanitize("-x") == "_-x"
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", registry.tools["srv__dots_and_spaces"].name)


def test_names_that_only_differ_in_replaced_characters_stay_apart() -> None:
    registry = build({"s": lists("a.b", "a_b", "a b")}, prefixTools="collisions")
    assert len(registry.tools) == 3
    assert {e.tool for e in registry.tools.values()} == {"a.b", "a_b", "a b"}
    assert all(valid_function_name(name) for name in registry.tools)


def test_allow_and_deny_lists() -> None:
    config = parse_config({
        "a": {"command": "x", "allowTools": ["one", "two"], "denyTools": ["two"]},
        "b": {"command": "x", "denyTools": ["one"], "prefix": "B"},
    })
    registry = Registry.build(
        [(config.servers["a"], lists("one", "two", "three")), (config.servers["b"], lists("one", "two"))],
        NamingRule(),
    )
    assert sorted(registry.tools) == ["B__two", "a__one"]


def test_resources_templates_and_prompts() -> None:
    config = parse_config({"a": {"command": "x"}, "b": {"command": "x"}})
    a = ServerLists(resources=[{"uri": "file:///x", "name": "x"}], prompts=[{"name": "greet"}],
                    templates=[{"uriTemplate": "db://{table}/rows{?limit}", "name": "rows"}])
    b = ServerLists(resources=[{"uri": "file:///x", "name": "x"}, {"uri": "b://y", "name": "y"}],
                    prompts=[{"name": "greet"}])
    registry = Registry.build([(config.servers["a"], a), (config.servers["b"], b)], NamingRule())
    assert sorted(registry.prompts) == ["a__greet", "b__greet"]
    assert registry.owner_of_uri("file:///x") == "a" and registry.shared_uris == {"file:///x": ["a", "b"]}
    assert registry.owner_of_uri("b://y") == "b"
    assert registry.owner_of_uri("db://users/rows?limit=3") == "a"
    assert registry.owner_of_uri("db://users/rows") == "a"
    assert registry.owner_of_uri("db://users/x/rows") is None
    assert template_pattern("file:///{+path}").fullmatch("file:///a/b/c")


def test_function_definitions_in_three_shapes() -> None:
    registry = build({"w": ServerLists(tools=[{
        "name": "now", "description": "Weather now",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }])})
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    entries = list(registry.tools.values())
    assert function_definitions(entries, "openai") == [
        {"type": "function", "function": {"name": "w__now", "description": "Weather now", "parameters": schema}}
    ]
    assert function_definitions(entries, "anthropic") == [
        {"name": "w__now", "description": "Weather now", "input_schema": schema}
    ]
    assert function_definitions(entries, "gemini") == [
        {"name": "w__now", "description": "Weather now", "parametersJsonSchema": schema}
    ]
    with pytest.raises(ValueError, match="openai, anthropic, gemini"):
        function_definitions(entries, "llama")


def test_equal_entries_compare_equal_for_reload() -> None:
    one = parse_server("a", {"command": "x", "args": ["1"]}, {})
    assert one == parse_server("a", {"command": "x", "args": ["1"]}, {})
    assert one != parse_server("a", {"command": "x", "args": ["2"]}, {})
    assert isinstance(one, ServerConfig)
