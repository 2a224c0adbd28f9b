"""The pass-through's answers spliced from the server's line (:mod:`.fastlane`).

The lane's answer to a passed-through call is the server's result, completed as the
gateway completes every 2026-07-28 result (:meth:`.fastpath.PassThrough._complete`): under
the caller's id, with the gateway's ``serverInfo`` in the result's ``_meta``. The parse path
builds that as a dict and dumps it again. :class:`AnswerSplice` builds the same line from
the server's bytes instead: the caller's id spliced in where the server's stood, the
server's ``serverInfo`` swapped for the gateway's, everything between relayed as it came.

The line was parsed all the same (the engine's read path parses every line: a line that is
not JSON, or holds NaN, never gets here), and the parsed message decides whether splicing
gives what the parse path would: the message is exactly ``jsonrpc``, ``id`` and ``result``,
and the line is that message as our encoder writes it (``{"jsonrpc":"2.0","id":<id>,
"result":`` and then the parsed result dumped again, byte for byte: one ``to_json`` of the
result and a comparison, about 0.6 us); the result is a complete one (``resultType``
``"complete"``); its structured output passes the tool's outputSchema; its ``_meta`` is its
last member and ``serverInfo`` the last member of that (or it has no ``_meta``). Anything
else steps aside: None, and the parse path answers. That includes a line with a member
written twice at any depth (``"result"`` or ``"structuredContent"`` twice, a key twice in a
content block): the parser keeps the last, so the parsed value is what was checked, and a
relay of the line's bytes would hand a first-wins reader the unchecked one; and a line in
another encoder's spelling (spaces, ``\\u`` escapes, ``1E2``), which the parse path writes
again in ours. So a spliced answer is the parse path's answer, byte for byte, for every
line: the splice only skips the work of getting there.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from ..engine.jsonrpc import RequestId, encode_id, encode_result
from ..protocol.client import ClientSession
from ..protocol.meta import SERVER_INFO_KEY
from .fastpath import _check_output

#: ``"io.modelcontextprotocol/serverInfo":``, as it is written in a line
INFO_KEY_BYTES = to_json(SERVER_INFO_KEY) + b":"
_HEAD = b'{"jsonrpc":"2.0","id":'
_RESULT = b',"result":'
_PLAIN_ON_RESULT = ClientSession.on_result
#: how many servers' ``serverInfo`` endings are kept (more: the table starts again)
_TAILS_KEPT = 256
_UNKNOWN: Any = object()


class AnswerSplice:
    """Builds the caller's response line from the server's answer line (see the module
    doc); ``modern`` is the gateway's stateless server, whose ``finish`` completes results."""

    __slots__ = ("_ours", "_theirs", "modern")

    def __init__(self, modern: Any) -> None:
        self.modern = modern
        #: method -> how the gateway completes a result's end: the ``serverInfo`` member
        #: and the closing braces (None: results pass unchanged; False: no splicing)
        self._ours: dict[str, bytes | bool | None] = {}
        #: id(session) -> (its server's serverInfo, how its line ends with it)
        self._theirs: dict[int, tuple[Any, bytes]] = {}

    def answer(
        self, method: str, caller_id: RequestId, upstream_id: RequestId, session: Any,
        tool: str | None, message: dict[str, Any], data: bytes,
    ) -> bytes | None:
        """The caller's response line for the server's answer ``message`` (parsed from
        ``data``), or None when only the parse path may answer it."""
        result = message["result"]
        if type(result) is not dict or result.get("resultType") != "complete" or len(message) != 3:
            return None
        if type(session).on_result is not _PLAIN_ON_RESULT:
            return None
        ours = self._ours.get(method, _UNKNOWN)
        if ours is _UNKNOWN:
            ours = self._ours[method] = self._our_end(method)
        if ours is False:
            return None
        if tool is not None and session.validate_tool_output and not result.get("isError"):
            listed = session.tool_schemas.tools.get(tool)
            if listed is not None and listed.get("outputSchema") is not None and not _output_passes(
                    session, tool, result):
                return None  # the parse path words the error
        head = (_HEAD + b"%d" % upstream_id if type(upstream_id) is int else _HEAD + encode_id(upstream_id)) + _RESULT
        if not data.startswith(head):
            return None
        # the rest of the line must be the parsed result as our encoder writes it: no
        # member the parse path drops (a duplicate, at any depth), no other spelling
        written = to_json(result)
        if len(data) != len(head) + len(written) + 1 or not data.startswith(written, len(head)):
            return None
        caller = (_HEAD + b"%d" % caller_id if type(caller_id) is int else _HEAD + encode_id(caller_id)) + _RESULT
        if ours is None:
            return caller + data[len(head):]
        assert isinstance(ours, bytes)
        if "_meta" not in result:  # the parse path adds it, last
            return caller + data[len(head):-2] + b',"_meta":{' + ours
        meta = result["_meta"]
        if type(meta) is not dict or not meta or next(reversed(result)) != "_meta" or next(reversed(meta)) != SERVER_INFO_KEY:
            return None
        info = meta[SERVER_INFO_KEY]
        known = self._theirs.get(id(session))
        theirs = known[1] if known is not None and known[0] == info else self._their_end(session, info)
        return caller + data[len(head):-len(theirs)] + ours

    def _our_end(self, method: str) -> bytes | bool | None:
        """How the gateway's completion ends a result of ``method``: taken from the parse
        path's own answer to a sample result with a ``serverInfo`` in place."""
        probe = {"resultType": "complete", "_meta": {SERVER_INFO_KEY: None}}
        finished = self.modern.finish(method, probe)
        if type(finished) is not dict or list(finished) != ["resultType", "_meta"]:
            return False  # it adds members of its own (a cacheable result's ttlMs, ...)
        meta = finished["_meta"]
        if type(meta) is not dict or list(meta) != [SERVER_INFO_KEY]:
            return False
        if meta[SERVER_INFO_KEY] is None:
            return None  # results are relayed unchanged (no serverInfo of the gateway's)
        line = encode_result(0, finished)
        return line[line.rindex(INFO_KEY_BYTES):]

    def _their_end(self, session: Any, info: Any) -> bytes:
        """How a line ends whose result's ``_meta`` ends with ``serverInfo`` ``info``,
        written as our encoder writes it (kept per server connection)."""
        key = id(session)
        if len(self._theirs) >= _TAILS_KEPT:
            self._theirs.clear()
        end = INFO_KEY_BYTES + to_json(info) + b"}}}"
        self._theirs[key] = (info, end)
        return end


def _output_passes(session: Any, tool: str, result: dict[str, Any]) -> bool:
    """Whether the client's check of structured output lets ``result`` through."""
    try:
        _check_output(session, tool, result)
    except Exception:
        return False
    return True


__all__ = ["AnswerSplice"]
