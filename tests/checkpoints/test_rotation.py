"""`rotate_checkpoints`: keep the newest periodic checkpoints, touch nothing else."""

import os

import pytest

from flywheel.checkpoints import rotate_checkpoints


def test_keeps_the_newest_by_iteration_number(tmp_path):
    for name in ("checkpoint_000002", "checkpoint_000010", "checkpoint_000001", "checkpoint_100000"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metadata.json").write_text("{}")
    for name in ("checkpoint", ".checkpoint_000011.tmp-1a2b3c4d", "checkpoint_notes"):
        (tmp_path / name).mkdir()
    (tmp_path / "checkpoint_000003").write_text("a file, not a checkpoint")

    removed = rotate_checkpoints(tmp_path, keep_last=2)

    assert removed == [str(tmp_path / "checkpoint_000001"), str(tmp_path / "checkpoint_000002")]
    assert sorted(os.listdir(tmp_path)) == [
        ".checkpoint_000011.tmp-1a2b3c4d",
        "checkpoint",
        "checkpoint_000003",
        "checkpoint_000010",
        "checkpoint_100000",
        "checkpoint_notes",
    ]
    assert rotate_checkpoints(tmp_path, keep_last=2) == []


def test_missing_run_dir_and_bad_keep_last(tmp_path):
    assert rotate_checkpoints(tmp_path / "missing", keep_last=1) == []
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=rf"rotate_checkpoints\(\) needs keep_last >= 1, got {bad!r}\."):
            rotate_checkpoints(tmp_path, keep_last=bad)
