"""Saving: atomic replacement, nothing of the user's deleted, named errors, and saves killed anywhere."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flywheel.checkpoints import atomic, io
from flywheel.checkpoints.tree import read_tree, tree_state
from flywheel.errors import CheckpointError

from .test_io import write_checkpoint
from .test_tree import rewrite_metadata

KILLER = Path(__file__).with_name("save_killer.py")


def _save(path, state):
    return atomic.save_directory(path, lambda d: write_checkpoint(d, state))


def _state(path):
    return tree_state(read_tree(path))


def test_save_writes_atomically_and_returns_the_resolved_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _save("runs/ckpt", {"v": 1})
    assert path == str(tmp_path / "runs" / "ckpt")
    assert _state(path) == {"v": 1}
    assert os.listdir(tmp_path / "runs") == ["ckpt"]
    path = _save(None, {"v": 2})
    assert os.path.basename(path).startswith("flywheel_checkpoint_") and _state(path) == {"v": 2}


@pytest.mark.parametrize("use_exchange", [True, False])
def test_save_replaces_a_checkpoint_and_takes_an_empty_directory(tmp_path, monkeypatch, use_exchange):
    if not use_exchange:
        monkeypatch.setattr(atomic, "exchange", lambda a, b: False)
    target = tmp_path / "ckpt"
    target.mkdir()  # as Ray Tune hands out checkpoint directories
    _save(target, {"v": 1})
    _save(target, {"v": 2})
    assert _state(target) == {"v": 2}
    assert os.listdir(tmp_path) == ["ckpt"]


def test_the_exchange_swaps_two_directories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_text("a")
    (tmp_path / "b").mkdir()
    if not atomic.exchange(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this platform or file system has no atomic exchange")
    assert os.listdir(tmp_path / "b") == ["x"] and os.listdir(tmp_path / "a") == []


def test_a_failed_write_names_the_path_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    target = tmp_path / "ckpt"
    _save(target, {"v": np.arange(3)})
    before = {name: (target / name).read_bytes() for name in os.listdir(target)}
    write_bytes = io.write_bytes

    def disk_full(path, data):
        if path.name == io.STATE_FILE:
            raise OSError(28, "No space left on device", str(path))
        write_bytes(path, data)

    monkeypatch.setattr(io, "write_bytes", disk_full)
    with pytest.raises(
        CheckpointError,
        match=rf"Cannot save a checkpoint to {target}: No space left on device \(.*\.ckpt\.tmp-\w+/state\.msgpack\)\. "
        rf"The previous checkpoint at {target} is unchanged\. Fix: free disk space",
    ):
        _save(target, {"v": np.arange(5)})
    assert {name: (target / name).read_bytes() for name in os.listdir(target)} == before
    assert os.listdir(tmp_path) == ["ckpt"]  # no temporary directory left behind


def test_a_real_write_limit_raises_a_checkpoint_error(tmp_path):
    """The process may write files of 64 KiB at most (RLIMIT_FSIZE): the OS itself fails the write."""
    code = f"""
import resource, signal, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import numpy as np
from flywheel.checkpoints import atomic
from flywheel.errors import CheckpointError
from test_io import write_checkpoint
from flywheel.checkpoints.tree import read_tree, tree_state

target = {str(tmp_path / "ckpt")!r}
atomic.save_directory(target, lambda d: write_checkpoint(d, {{"v": np.zeros(10, np.float32)}}))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
try:
    atomic.save_directory(target, lambda d: write_checkpoint(d, {{"v": np.zeros(100_000, np.float32)}}))
except CheckpointError as e:
    print(e)
print(tree_state(read_tree(target))["v"].shape)
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    error, shape = done.stdout.strip().splitlines()
    assert error.startswith(
        f"Cannot save a checkpoint to {tmp_path / 'ckpt'}: File too large ({tmp_path}/.ckpt.tmp-"
    )
    assert error.endswith("Fix: free disk space (or raise the quota or file size limit) and save again.")
    assert shape == "(10,)"


def test_a_parent_that_is_a_file_is_named(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(
        CheckpointError,
        match=rf"Cannot save a checkpoint to {tmp_path}/notes\.txt/run/ckpt: {tmp_path}/notes\.txt is a file, not a "
        r"directory",
    ):
        _save(tmp_path / "notes.txt" / "run" / "ckpt", {})
    assert (tmp_path / "notes.txt").read_text() == "x"


def _user_files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "files, match",
    [
        (
            {"results.csv": "1,2"},
            r"is not empty and is not an intact flywheel checkpoint \(.*has no metadata\.json",
        ),
        ({"metadata.json": '{"author": "me"}'}, r"is not an intact flywheel checkpoint \(.*incomplete"),
        (
            {"metadata.json": "{}", "checkpoint_complete": "", "notes.txt": "mine"},
            r"is not an intact flywheel checkpoint \(.*metadata\.json is not a flywheel checkpoint's metadata \(it has "
            r"no format_version\)",
        ),
    ],
)
def test_a_directory_that_is_not_a_checkpoint_is_refused_and_kept(tmp_path, files, match):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    before = _user_files(tmp_path)
    with pytest.raises(CheckpointError, match=match):
        _save(tmp_path, {"v": 1})
    assert _user_files(tmp_path) == before
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointError, match=r"it is a file, expected a directory path"):
        _save(tmp_path / "file", {})


@pytest.mark.parametrize("where", [".", "part"])
def test_a_checkpoint_holding_user_files_is_not_replaced(tmp_path, where):
    target = tmp_path / "ckpt"
    atomic.save_directory(target, lambda d: _two_level(d))
    (target / where / "my_notes.txt").write_text("keep me")
    with pytest.raises(
        CheckpointError,
        match=r"it holds a flywheel checkpoint, but also files flywheel did not write \(.*my_notes\.txt\), which "
        r"replacing it would delete",
    ):
        _save(target, {"v": 2})
    assert (target / where / "my_notes.txt").read_text() == "keep me"


def _two_level(directory):
    checksums = io.write_state(directory, {"v": 1}, owner="Whole")
    (directory / "part").mkdir()
    checksums[f"part/{io.METADATA_FILE}"] = write_checkpoint(directory / "part", {"p": 1})
    return io.write_metadata(
        directory, {"class": "a:W", "kind": "W", "components": ["part"], "checksums": checksums}
    )


def test_a_damaged_checkpoint_is_not_replaced(tmp_path):
    target = tmp_path / "ckpt"
    _save(target, {"v": 1})
    rewrite_metadata(target, format_version=1)
    with pytest.raises(CheckpointError, match=r"is not an intact flywheel checkpoint \(.*format version 1"):
        _save(target, {"v": 2})


def test_symlinked_paths_save_into_their_target(tmp_path):
    real = tmp_path / "disk" / "ckpt"
    _save(real, {"v": 1})
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert _save(link, {"v": 2}) == str(real)
    assert link.is_symlink() and _state(link) == {"v": 2}
    assert sorted(os.listdir(tmp_path / "disk")) == ["ckpt"]
    # `a/../b` is resolved as the OS resolves it: `b` next to where `a` points, not next to `a`.
    deep = tmp_path / "disk" / "deep"
    deep.mkdir()
    (tmp_path / "a").symlink_to(deep, target_is_directory=True)
    assert _save(tmp_path / "a" / ".." / "b", {"v": 3}) == str(tmp_path / "disk" / "b")
    assert not (tmp_path / "b").exists()


def test_leftovers_of_interrupted_saves_are_removed_by_the_next_save(tmp_path):
    target = tmp_path / "ckpt"
    _save(target, {"v": 1})
    for name in (".ckpt.tmp-0123abcd", ".ckpt.old-89abcdef"):
        (tmp_path / name / "sub").mkdir(parents=True)
    for name in (".ckpt.tmp-mine", ".other.old-0123abcd", "ckpt.old-0123abcd"):  # not flywheel's names
        (tmp_path / name).mkdir()
    _save(target, {"v": 2})
    assert sorted(os.listdir(tmp_path)) == [
        ".ckpt.tmp-mine",
        ".other.old-0123abcd",
        "ckpt",
        "ckpt.old-0123abcd",
    ]


def test_a_load_that_finds_only_backups_says_where_they_are(tmp_path):
    target = tmp_path / "ckpt"
    _save(target, {"v": 1})
    os.rename(target, tmp_path / ".ckpt.old-0123abcd")  # a kill between the two renames of the fallback
    with pytest.raises(
        CheckpointError,
        match=rf"No checkpoint at {target}: the path does not exist\. A save to it was interrupted while it "
        rf"replaced the checkpoint there; it left the complete checkpoint\(s\) \['{tmp_path}/\.ckpt\.old-0123abcd'\] "
        r"\(newest last\)\. Fix: rename one of them to ckpt, or save to .* again",
    ):
        read_tree(target)
    _save(target, {"v": 2})
    assert os.listdir(tmp_path) == ["ckpt"] and _state(target) == {"v": 2}


def _run_killer(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(KILLER), *map(str, args)], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_twenty_saves_killed_at_random_points_leave_a_loadable_checkpoint(tmp_path):
    rounds = _run_killer("random", tmp_path / "run" / "ckpt", 20, 0)
    assert len(rounds) == 20
    for report in rounds:
        assert "v" in report["state"], report  # the previous save's or the killed one's, never nothing
        assert report["after_next_save"] == [], report
    assert len({report["state"]["v"] for report in rounds}) > 1  # the kills did land in different saves


def test_a_save_killed_before_any_of_its_file_operations_leaves_a_loadable_checkpoint(tmp_path):
    rounds = _run_killer("steps", tmp_path / "run" / "ckpt")
    assert len(rounds) > 20  # mkdirs, 16 files, the exchange, the deletion of the old tree
    assert [r["state"] for r in rounds[:-2]] == [{"v": 0}] * (len(rounds) - 2)  # until the exchange: old
    assert [r["state"] for r in rounds[-2:]] == [{"v": 1}] * 2  # killed during cleanup, and complete: new
    assert all(r["after_next_save"] == [] for r in rounds)
    assert any(r["leftovers"] for r in rounds)  # so the next save did clean something up


def test_without_the_exchange_a_kill_between_the_renames_leaves_both_trees_named(tmp_path):
    rounds = _run_killer("steps", tmp_path / "run" / "ckpt", "no-exchange")
    missing = [r for r in rounds if "error" in r["state"]]
    assert len(missing) == 1  # only between the two renames is the path empty
    assert "A save to it was interrupted" in missing[0]["state"]["error"]
    assert sorted(name.split("-")[0] for name in missing[0]["leftovers"]) == [".ckpt.old", ".ckpt.tmp"]
    assert all(name in missing[0]["state"]["error"] for name in missing[0]["leftovers"])
    assert {json.dumps(r["state"]) for r in rounds if r is not missing[0]} == {'{"v": 0}', '{"v": 1}'}
    assert all(r["after_next_save"] == [] for r in rounds)
