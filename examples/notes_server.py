"""A notes server written as typed functions: ``python examples/notes_server.py`` serves
stdio; ``--port 8000`` serves Streamable HTTP at http://127.0.0.1:8000/mcp. Both eras.

``add_note`` needs the OAuth scope ``notes:write`` and ``search_notes`` ``notes:read``:
served with ``http_app(app, auth=BearerAuth(...))``, a token without them gets 403 (and
does not see those tools listed); over stdio, or over HTTP without ``auth``, there is no
token to judge and the scopes are not enforced."""

from __future__ import annotations

import argparse
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from typedmcp import http_app, run_stdio
from typedmcp.app import Context, McpApp


class Note(BaseModel):
    """A stored note."""

    id: int
    title: str
    tags: list[str]


app = McpApp("notes", version="1.0.0")
NOTES: dict[int, Note] = {}


@app.tool(annotations={"readOnlyHint": False}, scopes=["notes:write"])
def add_note(
    title: str, body: str, tags: list[str] = [], priority: Literal["low", "high"] = "low"  # noqa: B006
) -> Note:
    """Add a note.

    Args:
        title: A short title.
        body: The text of the note.
        tags: Labels to find the note by.
        priority: How urgent the note is.
    """
    note = Note(id=len(NOTES) + 1, title=title, tags=list(tags))
    NOTES[note.id] = note
    return note


@app.tool(annotations={"readOnlyHint": True}, scopes=["notes:read"])
def search_notes(query: str, limit: Annotated[int, Field(ge=1, le=100)] = 10) -> list[Note]:
    """Find notes whose title or tags contain the query.

    Args:
        query: Text to look for (case-insensitive).
        limit: The most notes to return.
    """
    needle = query.lower()
    found = [n for n in NOTES.values() if needle in n.title.lower() or any(needle in t.lower() for t in n.tags)]
    return found[:limit]


@app.tool()
async def export_notes(ctx: Context, count: int = 3) -> str:
    """Export the first notes, reporting progress once per note.

    Args:
        count: How many notes to export.
    """
    lines = []
    for step in range(1, count + 1):
        note = NOTES.get(step)
        lines.append(f"{step}. {note.title if note else '(none)'}")
        await ctx.report_progress(step, count, f"exported {step} of {count}")
    await ctx.info(f"exported {count} notes")
    return "\n".join(lines)


@app.resource("notes://index", mime_type="application/json")
def index() -> list[int]:
    """The ids of every note."""
    return sorted(NOTES)


@app.resource("notes://{note_id}", mime_type="application/json")
def note(note_id: int) -> Note:
    """One note, as JSON."""
    return NOTES[note_id]


@app.prompt()
def summarize(note_id: int, style: str = "short") -> str:
    """Ask for a summary of a note.

    Args:
        note_id: The note to summarize.
        style: short, detailed or bullet.
    """
    found = NOTES.get(note_id)
    return f"Summarize this note ({style}): {found.title if found else 'no such note'}"


@summarize.complete("style")
def styles(prefix: str) -> list[str]:
    """The summary styles starting with what was typed."""
    return [style for style in ("short", "detailed", "bullet") if style.startswith(prefix)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, help="serve Streamable HTTP on this port (default: stdio)")
    options = parser.parse_args()
    if options.port is None:
        run_stdio(app)
    else:
        import uvicorn

        uvicorn.run(http_app(app), host="127.0.0.1", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()
