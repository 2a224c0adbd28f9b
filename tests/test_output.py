"""Stage 6 (output): atomic writes, refusal of foreign folders, and ``check_tree`` reports."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from typedmcp_codegen.errors import CodegenError
from typedmcp_codegen.output import MARKER, check_tree, write_tree

OURS = {
    "__init__.py": f"# {MARKER} from the official MCP schema: do not edit.\n",
    "models.py": "X = 1\n",
    "sub/deep.py": "Y = 2\n",
}


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file and folder under ``root`` (folders map to b"<dir>"), byte for byte."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes() if path.is_file() else b"<dir>"
        for path in sorted(root.rglob("*"))
    }


def leftovers(parent: Path) -> list[str]:
    """Staging or backup folders that a write left beside its target."""
    return sorted(p.name for p in parent.iterdir() if ".new-" in p.name or ".old-" in p.name)


def test_write_tree_creates_exactly_the_file_map_and_no_temp_folders(tmp_path: Path) -> None:
    out = tmp_path / "deeper" / "pkg"
    write_tree(OURS, out)
    assert snapshot(out) == {
        "__init__.py": OURS["__init__.py"].encode(),
        "models.py": b"X = 1\n",
        "sub": b"<dir>",
        "sub/deep.py": b"Y = 2\n",
    }
    assert leftovers(out.parent) == []


def test_write_tree_writes_lf_newlines_and_utf8(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    write_tree({"__init__.py": OURS["__init__.py"], "a.py": 'S = "é"\nT = 1\n'}, out)
    assert (out / "a.py").read_bytes() == 'S = "é"\nT = 1\n'.encode()


def test_write_tree_replaces_earlier_output_and_drops_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    write_tree({**OURS, "stale.py": "OLD = 1\n"}, out)
    (out / "__pycache__").mkdir()
    (out / "__pycache__" / "models.cpython-310.pyc").write_bytes(b"\0")
    write_tree(OURS, out)
    assert sorted(snapshot(out)) == ["__init__.py", "models.py", "sub", "sub/deep.py"]
    assert leftovers(tmp_path) == []


def test_write_tree_into_an_existing_empty_folder(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    out.mkdir()
    write_tree(OURS, out)
    assert (out / "models.py").read_text() == "X = 1\n"


def test_write_tree_refuses_a_non_empty_foreign_folder(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    with pytest.raises(CodegenError, match="not written by mcp-codegen") as caught:
        write_tree(OURS, out)
    assert str(out) in caught.value.problem
    assert snapshot(tmp_path) == before


def test_write_tree_refuses_a_package_without_our_marker(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "__init__.py").write_text('"""A user package."""\n')
    before = snapshot(tmp_path)
    with pytest.raises(CodegenError, match="not written by mcp-codegen"):
        write_tree(OURS, out)
    assert snapshot(tmp_path) == before


def test_write_tree_refuses_a_file_as_target(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    out.write_text("a file\n")
    with pytest.raises(CodegenError, match="is a file"):
        write_tree(OURS, out)
    assert out.read_text() == "a file\n"


def test_write_tree_under_a_file_fails_cleanly(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x\n")
    before = snapshot(tmp_path)
    with pytest.raises(CodegenError, match="cannot write") as caught:
        write_tree(OURS, blocker / "pkg")
    assert "a_file" in caught.value.problem
    assert snapshot(tmp_path) == before


def test_failed_write_leaves_earlier_output_and_no_temp_folders(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    write_tree(OURS, out)
    before = snapshot(tmp_path)
    # "models.py" is a file, so "models.py/x.py" cannot be written: the staging step fails.
    with pytest.raises(CodegenError, match="nothing was changed"):
        write_tree({**OURS, "models.py/x.py": "Z = 3\n"}, out)
    assert snapshot(tmp_path) == before
    assert leftovers(tmp_path) == []


def test_check_tree_up_to_date(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    write_tree(OURS, out)
    report = check_tree(OURS, out)
    assert report.up_to_date
    assert (report.changed, report.missing, report.extra, report.diff) == ((), (), (), "")


def test_check_tree_reports_changed_missing_and_extra(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    write_tree(OURS, out)
    (out / "models.py").write_text("X = 2\n")
    (out / "sub" / "deep.py").unlink()
    (out / "extra.py").write_text("E = 1\n")
    before = snapshot(tmp_path)
    report = check_tree(OURS, out)
    assert not report.up_to_date
    assert report.changed == ("models.py",)
    assert report.missing == ("sub/deep.py",)
    assert report.extra == ("extra.py",)
    assert f"--- {out}/models.py (on disk)" in report.diff
    assert f"+++ {out}/models.py (generated)" in report.diff
    assert "-X = 2\n" in report.diff and "+X = 1\n" in report.diff
    assert snapshot(tmp_path) == before  # checking writes nothing


def test_check_tree_of_a_missing_folder_lists_every_file_missing(tmp_path: Path) -> None:
    report = check_tree(OURS, tmp_path / "absent")
    assert report.missing == tuple(sorted(OURS))
    assert not (tmp_path / "absent").exists()


def test_check_tree_ignores_pycache(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    write_tree(OURS, out)
    for folder in (out / "__pycache__", out / "sub" / "__pycache__"):
        folder.mkdir()
        (folder / "models.cpython-310.pyc").write_bytes(b"\x00\x01")
    assert check_tree(OURS, out).up_to_date


def test_written_folder_gets_the_same_permissions_as_a_plain_mkdir(tmp_path: Path) -> None:
    """The package folder is created by ``mkdtemp`` (mode 0700) and moved into place; it
    should end up with the umask's ordinary mode, like its subfolders, so others can read it.
    """
    out = tmp_path / "pkg"
    write_tree(OURS, out)
    reference = tmp_path / "reference"
    reference.mkdir()
    ordinary = stat.S_IMODE(reference.stat().st_mode)
    assert stat.S_IMODE((out / "sub").stat().st_mode) == ordinary
    assert stat.S_IMODE(out.stat().st_mode) == ordinary
