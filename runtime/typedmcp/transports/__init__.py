"""Transports: stdio, in-process pipes, Streamable HTTP (server and client) and the
deprecated HTTP+SSE, each carrying JSON-RPC messages for an engine and a typed session.

They sit above the typed seam and the stateless era (an HTTP server routes each era's
requests); the launchers that build them are the face (``typedmcp.connecting``,
``typedmcp.serving``).
"""
