"""The JSON-RPC engine, the runtime's lowest layer: ids, futures, errors, cancellation.

It knows method strings only, nothing of MCP's types; a transport hands it bytes and a
dispatcher (the typed seam, ``typedmcp.protocol``) answers what it receives.
"""
