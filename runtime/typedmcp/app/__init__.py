"""The authoring layer: a server as typed Python functions (:class:`McpApp`).

Schemas come from the signatures (pydantic), arguments are validated before a function
runs, results are shaped after it; the app is a handler object, served by ``run_stdio``,
``http_app`` and the rest unchanged."""

from __future__ import annotations

from .content import ContentBlock, audio, embedded_blob, embedded_text, image, resource_link, text
from .context import Context, Elicited, LogLevel
from .core import McpApp, PromptFunction, ResourceFunction
from .prompts import assistant, message, user
from .resources import RESOURCE_NOT_FOUND, UriTemplate
from .signature import DeclarationError
from .tools import WRAPPED_KEY, ToolSpec

__all__ = [
    "RESOURCE_NOT_FOUND",
    "WRAPPED_KEY",
    "ContentBlock",
    "Context",
    "DeclarationError",
    "Elicited",
    "LogLevel",
    "McpApp",
    "PromptFunction",
    "ResourceFunction",
    "ToolSpec",
    "UriTemplate",
    "assistant",
    "audio",
    "embedded_blob",
    "embedded_text",
    "image",
    "message",
    "resource_link",
    "text",
    "user",
]
