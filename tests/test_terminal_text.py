"""What a server sent is printed on a terminal as it was written, never as terminal control.

A tool description holding an ANSI escape (clear the screen, set the window title), a line
break or a bidi override must not rewrite the screen of whoever runs ``mcp-host list`` or
``mcp-host inspect`` against that server; each is printed as its escape.
"""

from __future__ import annotations

import re

import pytest

from typedmcp.cli.inspection import describe
from typedmcp.cli.terminal import terminal_text
from typedmcp.host.cli import _table

HOSTILE = "\x1b[2J\x1b]0;pwned\x07 ok\r\nfake row\u202eevil\u2028\x9b31m\x7f\x00"
#: What a terminal acts on: every control character but the line breaks we print ourselves.
ACTS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def test_terminal_text_escapes_every_control_character_and_keeps_the_rest() -> None:
    shown = terminal_text(HOSTILE)
    assert ACTS.search(shown) is None and "\n" not in shown
    assert shown == (
        "\\x1b[2J\\x1b]0;pwned\\x07 ok\\r\\nfake row\\u202eevil\\u2028\\x9b31m\\x7f\\x00"
    )
    assert terminal_text("Oslo: 12 °C, naïve ☂") == "Oslo: 12 °C, naïve ☂"


def test_a_laid_out_message_keeps_its_lines_and_escapes_the_rest() -> None:
    shown = terminal_text("server 'x' failed:\n    \x1b[2Jboom\r", lines=True)
    assert shown == "server 'x' failed:\n    \\x1b[2Jboom\\r"


@pytest.mark.parametrize("where", ["name", "version", "instructions", "tool", "description", "uri"])
def test_inspect_prints_a_hostile_server_s_text_escaped(where: str) -> None:
    text = {k: HOSTILE if k == where else k for k in ("name", "version", "instructions", "tool", "description", "uri")}
    report = {
        "server": {"name": text["name"], "version": text["version"]},
        "era": "handshake", "revision": "2025-11-25", "instructions": text["instructions"],
        "tools": [{"name": text["tool"], "description": text["description"]}],
        "resources": [{"uri": text["uri"]}], "templates": [], "prompts": [],
    }
    printed = describe(report)
    assert ACTS.search(printed) is None
    assert printed.count("\n") == describe({**report, **{"instructions": "i"}}).count("\n")


def test_mcp_host_list_tables_escape_a_hostile_server_s_text() -> None:
    printed = _table([["NAME", "DESCRIPTION"], ["fix__echo", HOSTILE], [HOSTILE, "x"]])
    assert ACTS.search(printed) is None
    assert printed.count("\n") == 2
