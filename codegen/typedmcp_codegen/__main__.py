"""``python -m typedmcp_codegen``: the same as the ``mcp-codegen`` command."""

from .cli import main

main()
