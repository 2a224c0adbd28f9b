"""Code mode (issue 32, its core): a program against the host's tools as a typed API,
type-checked, then run in a ``pydantic-monty`` sandbox (the ``codemode`` extra).

``result = await host.code_mode().run("import tools\\nawait tools.notes__add_note(title='t', body='b')")``

:mod:`.stubs` writes the ``tools`` module's signatures from the tools' schemas;
:mod:`.sandbox` runs the code within :class:`CodeLimits`. Not served by the gateway yet
(``--expose code`` is the next step).
"""

from .sandbox import INSTALL_HINT, CodeLimits, CodeMode, CodeResult
from .stubs import ToolStub, function_names, python_name, write_stubs

__all__ = [
    "INSTALL_HINT",
    "CodeLimits",
    "CodeMode",
    "CodeResult",
    "ToolStub",
    "function_names",
    "python_name",
    "write_stubs",
]
