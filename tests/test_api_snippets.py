"""Every ```python block of the API contract (../shared/API.md) runs as written, one section per test.

Each section's blocks run together in a fresh interpreter, so a snippet cannot lean on another's
imports or on this test process.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

API_MD = Path(__file__).resolve().parents[1] / ".." / "shared" / "API.md"

# What a snippet prints where the contract states it.
EXPECTED_OUTPUT = {"9": "2.5 10\n"}


def _sections() -> list[tuple[str, str, str]]:
    """(number, heading, code) for each section of API.md with python blocks."""
    if not API_MD.exists():
        return []
    sections = []
    for part in re.split(r"^## ", API_MD.read_text(), flags=re.M)[1:]:
        heading = part.splitlines()[0].strip()
        blocks = re.findall(r"^```python\n(.*?)^```", part, flags=re.M | re.S)
        if blocks:
            sections.append((heading.split(".")[0], heading, "\n".join(blocks)))
    return sections


def _params() -> list:
    if not API_MD.exists():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"{API_MD} is absent"), id="API.md")]
    return [pytest.param(number, code, id=heading) for number, heading, code in _sections()]


@pytest.mark.parametrize(("number", "code"), _params())
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
