"""Jinja2 templates for the generated stubs, shipped as package data of typedmcp_codegen."""
