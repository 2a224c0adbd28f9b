"""Content blocks for a tool that returns its own content (full control over the result):
``return [text("done"), image(png_bytes, "image/png")]``."""

from __future__ import annotations

import base64

from mcp_generated.v2025_11_25 import models

#: The content block types a tool (or a prompt message) may return.
ContentBlock = (
    models.TextContent
    | models.ImageContent
    | models.AudioContent
    | models.ResourceLink
    | models.EmbeddedResource
)
CONTENT_TYPES = (
    models.TextContent,
    models.ImageContent,
    models.AudioContent,
    models.ResourceLink,
    models.EmbeddedResource,
)


def text(value: str) -> models.TextContent:
    """A text block."""
    return models.TextContent(type="text", text=value)


def image(data: bytes, mime_type: str) -> models.ImageContent:
    """An image block (``data`` is the raw bytes; it is sent base64-encoded)."""
    return models.ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime_type)


def audio(data: bytes, mime_type: str) -> models.AudioContent:
    """An audio block (``data`` is the raw bytes; it is sent base64-encoded)."""
    return models.AudioContent(type="audio", data=base64.b64encode(data).decode(), mime_type=mime_type)


def resource_link(
    uri: str, name: str, *, mime_type: str | None = None, description: str | None = None
) -> models.ResourceLink:
    """A link to a resource the client may read."""
    return models.ResourceLink(
        type="resource_link", uri=uri, name=name, mime_type=mime_type, description=description
    )


def embedded_text(uri: str, value: str, *, mime_type: str | None = "text/plain") -> models.EmbeddedResource:
    """A resource's text carried in the result."""
    return models.EmbeddedResource(
        type="resource",
        resource=models.TextResourceContents(uri=uri, text=value, mime_type=mime_type),
    )


def embedded_blob(uri: str, data: bytes, *, mime_type: str | None = None) -> models.EmbeddedResource:
    """A resource's bytes carried in the result (sent base64-encoded)."""
    return models.EmbeddedResource(
        type="resource",
        resource=models.BlobResourceContents(
            uri=uri, blob=base64.b64encode(data).decode(), mime_type=mime_type
        ),
    )
