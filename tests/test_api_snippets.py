"""Every ```python block of the API contract (`docs/api.md`, the repo's copy of the project's
`../shared/API.md`) runs as written, one section per test.

Each section's blocks run together in a fresh interpreter, so a snippet cannot lean on another's
imports or on this test process.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
API_MD = REPO / "docs" / "api.md"
SHARED_API_MD = REPO.parent / "shared" / "API.md"

# What a snippet prints where the contract states it.
EXPECTED_OUTPUT = {"9": "2.5 10\n"}


def _sections() -> list[tuple[str, str, str]]:
    """(number, heading, code) for each section of API.md with python blocks."""
    sections = []
    for part in re.split(r"^## ", API_MD.read_text(), flags=re.M)[1:]:
        heading = part.splitlines()[0].strip()
        blocks = re.findall(r"^```python\n(.*?)^```", part, flags=re.M | re.S)
        if blocks:
            sections.append((heading.split(".")[0], heading, "\n".join(blocks)))
    return sections


@pytest.mark.parametrize(("number", "code"), [pytest.param(n, code, id=h) for n, h, code in _sections()])
def test_api_snippet_runs_as_written(number, code):
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"API.md section {number} failed:\n{result.stderr[-3000:]}"
    if number in EXPECTED_OUTPUT:
        assert result.stdout.startswith(EXPECTED_OUTPUT[number]), result.stdout


def test_sections_one_to_ten_have_code_and_run():
    assert [number for number, _, _ in _sections()] == [str(n) for n in range(1, 11)]


@pytest.mark.skipif(not SHARED_API_MD.exists(), reason="no ../shared/API.md beside this checkout to compare")
def test_the_repo_copy_is_the_shared_contract():
    assert API_MD.read_text() == SHARED_API_MD.read_text(), "copy ../shared/API.md to docs/api.md"
