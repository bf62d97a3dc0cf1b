"""The code blocks of docs/concepts/replay_buffers.md run as written, one after another."""

import re
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "concepts" / "replay_buffers.md"


def test_docs_code_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 4
    namespace = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    assert namespace["targets"].shape == (200,)  # one n-step target per sampled transition
    assert len(namespace["buffer"]) == 2 and namespace["buffer"].keys() == ["default_policy"]
