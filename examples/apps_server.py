"""An MCP Apps server: a notes board the host renders in a sandboxed iframe.

``show_board`` links the UI resource ``ui://notes/board`` (``_meta.ui.resourceUri``); the
board's HTML is served as ``text/html;profile=mcp-app`` with the sandbox it asks for (no
network, clipboard writes, a border). ``move_note`` is visible to the app only: the board calls
it, the model does not see it. ``python examples/apps_server.py`` serves stdio; ``--port 8000``
Streamable HTTP at http://127.0.0.1:8000/mcp; ``--heading`` changes the board's title."""

from __future__ import annotations

import argparse
import html

from pydantic import BaseModel

from typedmcp import http_app, run_stdio
from typedmcp.app import McpApp, UiCsp, UiLink

BOARD_URI = "ui://notes/board"
app = McpApp("notes-board", version="1.0.0")
HEADING = ["Notes board"]
COLUMNS: dict[str, list[str]] = {"todo": ["write the docs"], "done": []}


class Board(BaseModel):
    """The board's columns and their notes."""

    columns: dict[str, list[str]]


@app.ui_resource(BOARD_URI, title="Notes board", csp=UiCsp(), permissions=["clipboardWrite"], prefers_border=True)
def board() -> str:
    """The board's HTML (it renders what show_board returns, sent by the host)."""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Board</title></head><body>"
        f"<h1>{html.escape(HEADING[0])}</h1><main id='columns'></main>"
        "<script type='module'>/* the view talks to the host over postMessage (ext-apps App) */</script>"
        "</body></html>"
    )


@app.tool(ui=BOARD_URI)
def show_board() -> Board:
    """Show the notes board."""
    return Board(columns=COLUMNS)


@app.tool(ui=UiLink(BOARD_URI, visibility=["app"]))
def move_note(note: str, column: str) -> Board:
    """Move a note to another column (called by the board).

    Args:
        note: The note's text.
        column: Where it goes.
    """
    for notes in COLUMNS.values():
        if note in notes:
            notes.remove(note)
    COLUMNS.setdefault(column, []).append(note)
    return Board(columns=COLUMNS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, help="serve Streamable HTTP on this port (default: stdio)")
    parser.add_argument("--heading", default=HEADING[0], help="the board's title")
    options = parser.parse_args()
    HEADING[0] = options.heading
    if options.port is None:
        run_stdio(app)
    else:
        import uvicorn

        uvicorn.run(http_app(app), host="127.0.0.1", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()
