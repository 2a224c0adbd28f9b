"""mcp-codegen: turn the official MCP schema of one revision into a typed Python package.

The generator (``typedmcp_codegen.cli`` and the pipeline stages) needs jinja2, black,
datamodel-code-generator and jsonschema. The code it generates needs only the runtime,
``typedmcp`` (distribution typedmcp, built from ``runtime/``), which the
generator never imports. Importing this package itself stays free of generator
dependencies.
"""

__version__ = "0.4.0"
