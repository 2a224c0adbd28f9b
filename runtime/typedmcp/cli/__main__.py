"""``python -m typedmcp.cli run|inspect|install ...`` (what ``mcp-host install`` writes
into a client's configuration: it needs no script on the client's PATH; ``mcp-codegen run``
and ``inspect`` run it too, naming themselves in ``$TYPEDMCP_CLI_PROG``)."""

import os
import sys

from . import main

sys.exit(main(prog=os.environ.get("TYPEDMCP_CLI_PROG") or "python -m typedmcp.cli"))
