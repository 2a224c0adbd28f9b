"""The authoring layer: a server as typed Python functions (:class:`McpApp`).

Schemas come from the signatures (pydantic), arguments are validated before a function
runs, results are shaped after it; the app is a handler object, served by ``run_stdio``,
``http_app`` and the rest unchanged.

Rules:

* **Revisions.** The app is written once against the 2025-11-25 models and served to every
  revision and both eras. What a revision cannot express is dropped for it by the runtime's
  sieve: ``outputSchema``, ``structuredContent`` and ``title`` before 2025-06-18, tool
  ``annotations`` in 2024-11-05, ``icons`` before 2025-11-25 (the text block stays, so a
  client of any revision reads the result). A bad argument is an ``isError`` result from
  2025-11-25 on and a -32602 error before, as each revision specifies.
* **Schemas.** One pydantic model per function: defaults, ``Annotated``/``Field``
  constraints, ``Literal``, ``Enum``, nested models, ``TypedDict`` (``typing_extensions``'s
  before Python 3.12), dataclasses, optionals, lists and dicts. Arguments are closed
  (``additionalProperties: false``). Descriptions come from ``Field(description=...)``, else
  the docstring (``Args:``, NumPy ``Parameters`` or ``:param x:``); the tool's from the
  docstring's first paragraph. Models, TypedDicts and dataclasses returned are the
  structured output; other types are wrapped as ``{"result": ...}`` (``x-typedmcp-wrapped``).
* **Running.** ``async def`` functions run on the event loop; plain ``def`` ones in a worker
  thread (``asyncio.to_thread``), never on the loop. Cancellation raises ``CancelledError``
  in an async function at its next ``await``; a thread cannot be interrupted, so a sync one
  sees ``ctx.cancelled`` become true and should return early (its result is dropped). A
  sync function calls the context's coroutines with ``ctx.from_thread(...)``.
* **Mistakes** in a declaration raise :class:`DeclarationError` when it is made, naming the
  function, the parameter and the fix; an unknown keyword to ``McpApp(...)``, ``run_stdio``
  or ``http_app`` raises ``UnknownOptionError`` (a ``TypeError``) naming the closest one.
* **Who asks.** ``ctx.principal`` is what the server's ``BearerAuth.verify`` returned for
  the request's token (``ctx.principal_as(T)`` narrows it) and ``ctx.headers`` the request's
  HTTP headers (lower-case names, ``Authorization`` left out); over stdio there are neither
  (None, ``{}``). Over HTTP+SSE (2024-11-05) they are those of the SSE connection.
* **MCP Apps.** ``@app.ui_resource("ui://...", csp=UiCsp(...))`` serves a function's HTML as
  a UI resource; ``@app.tool(ui="ui://...")`` links a tool to it (``_meta.ui``, from
  2025-06-18 on; see ``typedmcp.protocol.apps``).
"""

from __future__ import annotations

from .content import ContentBlock, audio, embedded_blob, embedded_text, image, resource_link, text
from .context import Context, Elicited, LogLevel
from .core import McpApp
from .declared import PromptFunction, ResourceFunction
from .prompts import assistant, message, user
from .resources import RESOURCE_NOT_FOUND, UriTemplate
from .signature import DeclarationError
from .tools import WRAPPED_KEY, ToolSpec
from .ui import UiLink, UiResourceSpec
from ..protocol.apps import UiCsp

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
    "UiCsp",
    "UiLink",
    "UiResourceSpec",
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
