"""mcp-codegen: turn the official MCP schema of one revision into a typed Python package.

The generator (``mcp_codegen.cli`` and the pipeline stages) needs jinja2, black,
datamodel-code-generator and jsonschema. ``mcp_codegen.runtime`` needs only pydantic,
so importing this package itself must stay free of generator dependencies.
"""

__version__ = "0.1.0"
