"""The README's Python blocks run as written (in a scratch directory, sharing names)."""

import logging


def test_readme_code_blocks_run(tmp_path, monkeypatch, capsys, caplog, run_doc_blocks):
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING):
        namespace = run_doc_blocks("README.md", blocks=2)
    assert caplog.messages == []  # e.g. no warning about the snippet's own settings
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["1", "2", "3", "4", "5"]
    assert namespace["action"] in (0, 1)
    assert (tmp_path / "runs" / "my_cartpole" / "learner_group").is_dir()
