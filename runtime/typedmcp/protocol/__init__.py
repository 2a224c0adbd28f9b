"""The typed seam: generated packages plus handler objects serve the JSON-RPC engine.

What both eras share: the bases generated code imports (``model``, ``spec``, ``stubs``: a
stable, public surface), the dispatch-table-driven :class:`~.session.Session`, the client
and handshake-era server sessions, capabilities, result checks, tools, tasks and the
change feed. It imports only the engine below it, never a transport.
"""
