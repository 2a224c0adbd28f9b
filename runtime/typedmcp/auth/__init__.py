"""Authorization: bearer-token checks for the HTTP server (``bearer``; the token verifiers
``jwt`` (JWKS), ``introspection`` (RFC 7662) and their ``MCP_AUTH_*`` configuration, ``env``)
and OAuth 2.1 for the HTTP client (``oauth``, which implements the client transport's
``HttpAuth`` hook)."""
