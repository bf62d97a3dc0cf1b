"""The code blocks of docs/concepts/reporting.md run as written (in order, sharing names)."""

import re
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "concepts" / "reporting.md"


def test_docs_code_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 3
    namespace = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    assert capsys.readouterr().out == "2\n"
    run_dir = Path(namespace["run_dir"])
    assert sorted(p.name for p in run_dir.iterdir())[1:] == ["results.csv", "results.jsonl"]
    assert len(namespace["returns"]) == 2
