"""One set of speed figures (issue 30, req. 7): a ratio the README or a documentation page
quotes (``5.44x``) is one that ``docs/explanation/speed.md`` or ``benchmarks/README.md``,
where the measured runs are recorded, states; anything else links to them instead of keeping
figures of its own, which go stale when the benchmarks are run again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO_ROOT

#: Where the measured figures live.
SOURCES = (REPO_ROOT / "docs" / "explanation" / "speed.md", REPO_ROOT / "benchmarks" / "README.md")
#: A ratio: ``5.44x``, ``10x`` (not ``0x1F``, not part of a longer number).
RATIO = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)x\b")
#: The pages quoting figures: the README and the documentation but the speed page itself and
#: the diff example (a tool's report, not a measurement).
PAGES = sorted(
    {REPO_ROOT / "README.md", *(REPO_ROOT / "docs").rglob("*.md")}
    - {SOURCES[0], REPO_ROOT / "docs" / "reference" / "diff-example.md"}
)


def ratios(text: str) -> set[str]:
    return {match.group(0) for match in RATIO.finditer(text)}


def test_the_ratio_pattern_finds_ratios_and_nothing_else() -> None:
    assert ratios("5.44x-5.84x, 10x (0.09x) 0x1F 1.5 x box") == {"5.44x", "5.84x", "10x", "0.09x"}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_a_page_quotes_only_measured_ratios(page: Path) -> None:
    measured = ratios("\n".join(source.read_text(encoding="utf-8") for source in SOURCES)) | {"1x"}
    stray = sorted(ratios(page.read_text(encoding="utf-8")) - measured, key=lambda r: float(r[:-1]))
    assert not stray, (
        f"{page.relative_to(REPO_ROOT)} quotes {stray}, which neither docs/explanation/speed.md "
        "nor benchmarks/README.md states: quote their current figures, or link to them"
    )


def test_the_readme_links_its_speed_figures_to_the_speed_page() -> None:
    row = next(line for line in (REPO_ROOT / "README.md").read_text().splitlines() if line.startswith("| speed"))
    assert "(docs/explanation/speed.md" in row
