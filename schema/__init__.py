"""Pinned schema revisions (``pins.json``), shipped as package data of typedmcp_codegen."""
