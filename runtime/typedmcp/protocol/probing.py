"""The ``server/discover`` probe on a pipe (stdio): waited for, never followed by a second
negotiation while it is unanswered.

On one ordered pipe, an ``initialize`` sent behind an unanswered probe reaches the server
after it: a server slow to start answers the probe first (the client has dropped it), then
refuses the ``initialize`` (a 2026-07-28 server, e.g. the official SDK's) or settles on the
handshake era. So on a pipe the client waits for the probe's answer up to
``connect_timeout`` (a notice in the log after ``probe_timeout``), then fails with
:class:`NegotiationTimeout`. Over HTTP each request stands alone, and an unanswered probe
still falls back to ``initialize`` after ``probe_timeout``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

logger = logging.getLogger("typedmcp")

#: How long a ``server/discover`` probe goes unanswered before the client falls back to
#: ``initialize`` over HTTP, or (on a pipe, which it keeps waiting on) logs a notice: the
#: default of ``probe_timeout``, read when a session is made.
PROBE_TIMEOUT = 10.0


class NegotiationTimeout(TimeoutError):
    """The server did not answer the negotiation within ``connect_timeout``; the message
    names the server (its command line) and how long the client waited."""


async def probe_on_pipe(session: Any, spec: Any) -> Any:
    """Send ``server/discover`` for ``session`` (a ``ClientSession`` on a pipe) and wait for
    its raw answer up to ``session.connect_timeout`` (None: no limit)."""
    limit: float | None = session.connect_timeout
    notice = asyncio.get_running_loop().call_later(
        session.probe_timeout, logger.info,
        "%s: no answer to server/discover yet after %g s; waiting (connect_timeout=%s)",
        session.origin, session.probe_timeout, f"{limit:g} s" if limit else "none",
    )
    try:
        return await session._request(spec, {}, limit or 0)
    except asyncio.TimeoutError:
        assert limit is not None
        command = (session.origin or "").removeprefix("stdio:")
        server = f"the server '{command}'" if command else "the server"
        raise NegotiationTimeout(
            f"{server} did not answer server/discover in {limit:g} s "
            f"(connect_timeout={limit:g}; on a pipe the client never sends initialize while "
            "the probe is unanswered): give a server slow to start a longer connect_timeout, "
            "or check its stderr"
        ) from None
    finally:
        notice.cancel()
