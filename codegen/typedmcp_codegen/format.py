"""Stage 5: format every generated Python file with black."""

from __future__ import annotations

import black
from black.mode import Mode, TargetVersion
from black.parsing import InvalidInput

from .errors import CodegenError

BLACK_MODE = Mode(target_versions={TargetVersion.PY310}, line_length=88)


def format_files(files: dict[str, str]) -> dict[str, str]:
    """Black-format the ``.py`` entries of a file map; other files pass through."""
    return {path: format_source(path, text) if path.endswith(".py") else text
            for path, text in files.items()}


def format_source(path: str, source: str) -> str:
    """Black-format one module; a syntax error names the generated file."""
    try:
        return black.format_str(source, mode=BLACK_MODE)
    except InvalidInput as exc:
        raise CodegenError(
            f"generated {path} is not valid Python: {exc}",
            "this is a generator bug; report it with the schema revision",
        ) from exc
