"""The pipeline: load -> analyse -> emit models -> render stubs -> format.

Returns an in-memory file map ``{relative path: text}``; writing it and ``--check`` are
two thin consumers of that map (``output``).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from .analyse import Protocol, analyse
from .errors import CodegenError
from .format import format_files
from .load import LoadedSchema, SchemaSource, load_schema
from .models import emit_models, index_models
from .pins import Pin, PinTable, package_name
from .render import (
    PackageHeader,
    render_models,
    render_root_init,
    render_stubs,
)


@dataclass(frozen=True)
class GeneratedPackage:
    """One revision's package: its name, protocol model and files."""

    name: str
    header: PackageHeader
    protocol: Protocol
    files: dict[str, str]


def generate_package(schema: LoadedSchema, pin: Pin | None) -> GeneratedPackage:
    """Generate the package of one loaded schema."""
    protocol = analyse(schema.document, schema.revision, schema.sha256)
    if pin is not None and not pin.floating and pin.era != protocol.era.value:
        raise CodegenError(
            f"revision {schema.revision}: the schema is of the {protocol.era.value} era, "
            f"the pin says {pin.era}",
            "correct the era in schema/pins.json",
        )
    header = PackageHeader(
        schema.revision, protocol.era.value, schema.sha256, schema.pinned, known=pin is not None
    )
    modules = emit_models(schema.document)
    index = index_models(modules)
    files = render_stubs(protocol, index, header)
    files.update(render_models(header, modules, index))
    return GeneratedPackage(package_name(schema.revision), header, protocol, format_files(files))


def generate_revisions(
    revisions: list[str], pins: PinTable, source: SchemaSource, workers: int | None = None
) -> list[GeneratedPackage]:
    """Load and generate several revisions, in parallel processes when there are cores."""
    workers = workers or min(len(revisions), os.cpu_count() or 1)
    if workers <= 1 or len(revisions) <= 1:
        return [_load_and_generate(revision, pins, source) for revision in revisions]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_load_and_generate, r, pins, source) for r in revisions]
        return [future.result() for future in futures]


def _load_and_generate(revision: str, pins: PinTable, source: SchemaSource) -> GeneratedPackage:
    return generate_package(load_schema(revision, pins, source), pins.find(revision))


def generate_root(packages: list[GeneratedPackage]) -> dict[str, str]:
    """The file map of a folder holding several packages plus its ``__init__.py``."""
    files = format_files({"__init__.py": render_root_init([p.header for p in packages])})
    files["py.typed"] = ""
    for package in packages:
        for path, text in package.files.items():
            files[f"{package.name}/{path}"] = text
    return dict(sorted(files.items()))
