"""The one path by which outside text reaches generated source.

A server's name, version, protocol version, tool names, titles, descriptions and ``$ref``s,
and a schema's descriptions and method names, are data: each reaches a template only through
one of the functions below, which turn it into :class:`Code` for one place in the source:

- :func:`comment`: the rest of a ``#`` line (every line break and other unprintable
  character written as its escape: ``\\n``, ``\\r``, ``\\x00``, ``\\u2028``);
- :func:`docstring`: the body of a ``\"\"\"`` docstring, reading the same once parsed;
- :func:`string_literal`: a double-quoted Python string literal of the text;
- :func:`identifier`: a name (the text must already be a Python identifier, not a keyword).

The jinja2 environment (``render._environment``) has them as the filters ``comment``,
``docstring``, ``literal`` and ``identifier``, and :func:`guard` as its ``finalize``: every
``{{ ... }}`` value is :class:`Code`, a number or ``None``, or a plain string that is
*inert* (letters, digits, ``_ . - /``, spaces and commas: it can neither end a line, a
comment, a docstring or a literal nor call anything). Anything else stops generation with
an error naming the value, so a template that forgets the filter fails on the first
unusual value instead of writing it into the source.
"""

from __future__ import annotations

import keyword
import re

import jinja2

from .errors import CodegenError

#: A plain string a template may write as it is (see the module docstring).
INERT = re.compile(r"[A-Za-z0-9_.\-/, ]*")
#: Quotes a docstring escapes: every run of three or more, and the run that ends the text.
QUOTE_RUN = re.compile(r'"{3,}|"+\Z')


class Code(str):
    """Text that is Python source already: made by a function below, or written by the
    generator itself (a rendered template, ``ast.unparse``, black, checked model code)."""

    __slots__ = ()


def _escape(character: str) -> str:
    """An unprintable character as its Python escape (``\\n``, ``\\x00``, ``\\u2028``)."""
    return repr(character)[1:-1]


def comment(text: str) -> Code:
    """``text`` as the rest of one ``#`` comment line: it cannot end the line."""
    return Code("".join(c if c.isprintable() else _escape(c) for c in text))


def docstring(text: str) -> Code:
    """``text`` as the body of a triple-quoted docstring, reading the same once parsed.

    Backslashes are doubled; every unprintable character but a newline and a tab is written
    as its escape (a carriage return, NUL, ``\\u2028``, a lone surrogate); every quote of a
    run of three or more, and of the run that ends the text, is escaped.
    """
    safe = "".join(
        c if c.isprintable() or c in "\n\t" else _escape(c) for c in text.replace("\\", "\\\\")
    )
    return Code(QUOTE_RUN.sub(lambda match: '\\"' * len(match.group()), safe))


def string_literal(text: str) -> Code:
    """``text`` as a double-quoted Python string literal (``"a \\"b\\"\\n"``)."""
    return Code(
        '"'
        + "".join(
            "\\" + c if c in '"\\' else c if c.isprintable() else _escape(c) for c in text
        )
        + '"'
    )


def identifier(text: str) -> Code:
    """``text`` as a name in code; it must be a Python identifier and not a keyword."""
    if not text.isidentifier() or keyword.iskeyword(text) or not text.isascii():
        raise CodegenError(
            f"{text!r} cannot be a name in generated code",
            "this is a generator bug (names are made by toolset.python_name); report it",
        )
    return Code(text)


def guard(value: object) -> object:
    """The environment's ``finalize``: let through only what cannot write code by itself."""
    if isinstance(value, Code | int | float | jinja2.Undefined) or value is None:
        return value  # (StrictUndefined raises when written)
    if isinstance(value, str) and INERT.fullmatch(value):
        return value
    raise CodegenError(
        f"a template was given {value!r} unescaped",
        "this is a generator bug: pass outside text through a filter of "
        "typedmcp_codegen.escape (comment, docstring, literal, identifier)",
    )
