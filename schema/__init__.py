"""Pinned schema revisions (``pins.json``), shipped as package data of mcp_codegen."""
