"""Text a server sent, made safe to print on a terminal.

A server's name, tool descriptions, progress messages and error texts are data: printed
as they came, an ANSI escape sequence in a description could move the cursor, rewrite
what is on screen or set the window title, and a line break or a bidi override could make
one tool's row read as another's. :func:`terminal_text` writes every control character as
its Python escape, so a terminal shows the text exactly as the server wrote it.
"""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, the Unicode line and paragraph separators and the bidi
#: embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: object, *, lines: bool = False) -> str:
    """``text`` as a terminal prints it as written: control characters escaped (``\\x1b``,
    ``\\n``, ``\\u202e``). ``lines``: keep line feeds (a message whose lines are laid out,
    such as a server's stderr quoted line by line), escaping the rest."""
    if lines:
        return "\n".join(terminal_text(line) for line in str(text).split("\n"))
    return _CONTROL.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), str(text))
