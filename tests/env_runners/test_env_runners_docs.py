"""The code blocks of docs/concepts/env_runners.md run as written (in order, sharing names)."""

import re
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "concepts" / "env_runners.md"


def test_docs_code_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 2
    namespace = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    assert namespace["runner"].weights_seq_no == 5
    assert 8 <= sum(len(e) for e in namespace["first"]) < 12
