"""Saves pointed at the user's own files: refused, with every file left as it was."""

import os

import pytest

from flywheel.errors import CheckpointError
from flywheel.inference import load_policy


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def algo(saved):
    from flywheel import Algorithm

    algo = Algorithm.from_checkpoint(saved)
    yield algo
    algo.stop()


def test_a_folder_holding_its_own_metadata_json_is_not_deleted(algo, tmp_path):
    home = tmp_path / "my_project"
    (home / "src").mkdir(parents=True)
    (home / "metadata.json").write_text('{"name": "my project"}')
    (home / "src" / "main.py").write_text("print('hello')")
    before = _files(home)
    with pytest.raises(CheckpointError, match=r"is not empty and is not an intact flywheel checkpoint"):
        algo.save_to_path(home)
    assert _files(home) == before


def test_a_symlink_to_a_user_folder_is_not_a_way_around_the_check(algo, tmp_path):
    home = tmp_path / "documents"
    home.mkdir()
    (home / "thesis.tex").write_text("\\section{}")
    (tmp_path / "link").symlink_to(home, target_is_directory=True)
    with pytest.raises(
        CheckpointError, match=rf"Cannot save a checkpoint to {home}: the directory is not empty"
    ):
        algo.save_to_path(tmp_path / "link" / ".." / "documents")
    with pytest.raises(CheckpointError, match=rf"Cannot save a checkpoint to {home}: "):
        algo.save_to_path(tmp_path / "link")
    assert os.listdir(home) == ["thesis.tex"]


def test_files_the_user_put_into_a_checkpoint_are_kept(algo, ckpt):
    (ckpt / "learner_group" / "NOTES.md").write_text("best run so far")
    before = _files(ckpt)
    with pytest.raises(
        CheckpointError, match=r"also files flywheel did not write \(.*learner_group/NOTES\.md\)"
    ):
        algo.save_to_path(ckpt)
    assert _files(ckpt) == before
    os.remove(ckpt / "learner_group" / "NOTES.md")
    algo.save_to_path(ckpt)  # only flywheel's files: replaced
    assert load_policy(ckpt).compute_single_action([0.0]) in (0, 1)
