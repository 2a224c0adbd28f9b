"""``python -m mcp_codegen``: the same as the ``mcp-codegen`` command."""

from .cli import main

main()
