"""The README's Python blocks run as written (in a scratch directory, sharing names)."""

import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_readme_code_blocks_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 2
    namespace = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["1", "2", "3", "4", "5"]
    assert namespace["action"] in (0, 1)
    assert (tmp_path / "runs" / "my_cartpole" / "learner_group").is_dir()
