"""The code blocks of docs/concepts/dqn.md run as written, one after another."""

import re
from pathlib import Path

PAGE = Path(__file__).parents[3] / "docs" / "concepts" / "dqn.md"


def test_docs_code_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 6
    namespace = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    result = namespace["result"]
    assert result["num_env_steps_sampled_lifetime"] == 1000
    assert result["replay_buffer"]["num_env_steps_stored"] == 1000
    assert 0.9 < result["learners"]["default_policy"]["curr_epsilon"] < 1.0  # 200-1000 steps into the decay
    assert namespace["q"].shape == (3, 2)
    assert namespace["logits"].shape == (3, 2, 51)
    assert namespace["c51_module"].atoms.tolist()[:3] == [0.0, 2.0, 4.0]
    assert sorted(namespace["two_policies"]["learners"]) == ["__all_modules__", "p0", "p1"]
    assert len(namespace["restored"].replay_buffer) == 200
