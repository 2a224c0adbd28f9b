"""The stateless era (2026-07-28) on the server: requests that describe themselves.

``server`` serves them (input-required rounds, listen streams, caching hints), ``sealing``
seals ``requestState``, ``scope`` is what one request knows while its handler runs, and
``router`` puts both eras behind one dispatcher. Built on ``typedmcp.protocol``.
"""
