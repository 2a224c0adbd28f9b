"""Parsing what a peer sent: JSON, with numbers too large for a float refused.

pydantic-core's ``from_json(..., allow_inf_nan=False)`` refuses ``NaN`` and ``Infinity``,
but reads ``1e400``, ``-1e309`` and ``1`` followed by 400 zeros and ``.0`` as infinities, which
then reach handlers (a ``float`` tool answered ``{"result": null}``) or the encoder. Every parse
of a peer's message goes through :func:`decode`, which refuses them; a cheap byte scan keeps
the usual message from paying for more than the scan.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic_core import from_json

#: The most characters of an overflowing number that the error quotes.
_NAMED = 40
#: Where a number of a peer's JSON may be too large for a float. pydantic-core reads
#: ``1e400``, ``-1e309`` and ``1`` followed by 400 zeros and ``.0`` as infinities, even with
#: ``allow_inf_nan=False``. A float overflows only with an exponent of three digits or more,
#: or with 210 digits or more before the point (309 without an exponent, up to 99 with
#: one). Two cheap looks find a superset of those messages; only then is the parsed message
#: searched for an infinity (:func:`_non_finite`):
#: - an exponent of three digits: a regex that starts with a literal, which the regex engine
#:   looks for at C speed (about 0.2 us for a 100-byte message, 1.3 ns a byte of English
#:   text); ``E`` only when there is one (``0x45 in data``: an int, no buffer to take);
#: - a run of 200 digits or points holds two consecutive bytes of every 100th (``data[::100]``,
#:   a hundredth of the message) that are digits or points; only then the run is looked for.
_BIG_EXPONENT = re.compile(rb"e\+?[0-9]{3}")
_BIG_EXPONENT_UPPER = re.compile(rb"E\+?[0-9]{3}")
_LONG_RUN = re.compile(rb"[0-9.]{200}")
_RUN_STRIDE = 100
_DIGITS_AS_ZEROS = bytes.maketrans(b"0123456789.", b"0" * 11)
#: A JSON number with a fraction or an exponent (what is read as a float).
_FLOAT_LITERAL = re.compile(rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _may_overflow(data: bytes) -> bool:
    """Whether ``data`` may hold a number too large for a float (see :data:`_BIG_EXPONENT`)."""
    if _BIG_EXPONENT.search(data) is not None or (0x45 in data and _BIG_EXPONENT_UPPER.search(data) is not None):
        return True
    return (
        len(data) >= 2 * _RUN_STRIDE
        and b"00" in data[::_RUN_STRIDE].translate(_DIGITS_AS_ZEROS)
        and _LONG_RUN.search(data) is not None
    )


class NonFiniteNumber(ValueError):
    """A peer's JSON holds a number too large for a float (it would be read as infinity).
    ``request_id``: the id of the request it is in (its error answers that request), or None."""

    def __init__(self, message: str, request_id: str | int | None) -> None:
        super().__init__(message)
        self.request_id = request_id


def decode(data: bytes, *, cache_strings: bool | Literal["all", "keys", "none"] = True) -> Any:
    """Parse JSON a peer sent: ``from_json`` with ``allow_inf_nan=False`` (``NaN`` and
    ``Infinity`` are not JSON), which also refuses a number too large for a float (``1e400``):
    :class:`NonFiniteNumber`, a ``ValueError`` as any parse error. Every parse of what a
    peer sent goes through here."""
    message = from_json(data, allow_inf_nan=False, cache_strings=cache_strings)
    if _may_overflow(data) and _non_finite(message):
        request_id = message.get("id") if type(message) is dict and "method" in message else None
        raise NonFiniteNumber(
            f"the number {_too_large(data)} is too large for a float (it would be read as infinity, "
            "which JSON cannot carry): send a smaller number, or the value as a string",
            request_id if type(request_id) is str or type(request_id) is int else None,
        )
    return message


def _non_finite(message: Any) -> bool:
    """Whether a parsed message holds an infinite float, at any depth."""
    waiting = [message]
    while waiting:
        value = waiting.pop()
        if type(value) is float:
            if not math.isfinite(value):
                return True
        elif type(value) is dict:
            waiting.extend(value.values())
        elif type(value) is list:
            waiting.extend(value)
    return False


def _too_large(data: bytes) -> str:
    """The first number literal of ``data`` that overflows a float, clipped (for the error)."""
    for found in _FLOAT_LITERAL.finditer(data):
        literal = found.group()
        if (b"." in literal or b"e" in literal or b"E" in literal) and math.isinf(float(literal)):
            text = literal.decode("ascii")
            return text if len(text) <= _NAMED else f"{text[:_NAMED]}... ({len(text) - _NAMED} more characters)"
    return "in the message"  # (a literal that only reads as one inside a string: not reached)
