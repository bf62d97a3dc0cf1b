"""Checkpoint files: state round trips, atomic saves, and one clear error per kind of damage."""

import json
import os
import zlib

import numpy as np
import pytest

from flywheel.checkpoints import io
from flywheel.errors import CheckpointError


def _write_checkpoint(directory, state, metadata=None):
    checksums = io.write_state(directory, state, owner="Thing")
    io.write_metadata(directory, {**(metadata or {"class": "x:Y", "components": []}), "checksums": checksums})
    io.mark_complete(directory)


def test_state_round_trip_keeps_types_and_values(tmp_path):
    rng_like = ("MT19937", np.arange(5, dtype=np.uint32), 3, 0, 0.0)
    state = {
        "weights": {"pi.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "empty": np.zeros((0, 2))},
        "optimizer": {"state": {0: {"step": np.array(7.0, np.float32)}}, "betas": (0.9, 0.999)},
        "rng": rng_like,
        "scalar": np.float64(2.5),
        "flag": np.bool_(True),
        "counts": [1, 2.5, None, "x", b"raw", True],
    }
    _write_checkpoint(tmp_path, state)
    back = io.read_state(tmp_path)

    assert back["weights"]["pi.weight"].dtype == np.float32
    np.testing.assert_array_equal(back["weights"]["pi.weight"], state["weights"]["pi.weight"])
    assert back["weights"]["empty"].shape == (0, 2)
    assert back["optimizer"]["state"][0]["step"].shape == ()
    assert back["optimizer"]["state"][0]["step"] == 7.0
    assert back["optimizer"]["betas"] == (0.9, 0.999)
    assert type(back["rng"]) is tuple and back["rng"][0] == "MT19937"
    np.testing.assert_array_equal(back["rng"][1], np.arange(5, dtype=np.uint32))
    assert back["rng"][1].dtype == np.uint32
    assert type(back["scalar"]) is np.float64 and back["scalar"] == 2.5
    assert type(back["flag"]) is np.bool_
    assert back["counts"] == [1, 2.5, None, "x", b"raw", True]
    assert back["weights"]["pi.weight"].flags.writeable


def test_arrays_live_in_safetensors(tmp_path):
    import safetensors.numpy

    _write_checkpoint(tmp_path, {"w": {"a": np.ones(3, np.float32)}})
    tensors = safetensors.numpy.load_file(str(tmp_path / io.TENSORS_FILE))
    assert list(tensors) == ["w/a"]
    np.testing.assert_array_equal(tensors["w/a"], np.ones(3, np.float32))


def test_unsupported_state_values_raise(tmp_path):
    with pytest.raises(CheckpointError, match=r"Thing's state: w/x is a set\. States hold plain data"):
        io.write_state(tmp_path, {"w": {"x": {1, 2}}}, owner="Thing")
    with pytest.raises(CheckpointError, match=r"the dict at w has keys \[\(1, 2\)\]"):
        io.write_state(tmp_path, {"w": {(1, 2): 3}}, owner="Thing")
    with pytest.raises(CheckpointError, match="object arrays are not supported"):
        io.write_state(tmp_path, {"w": np.array([None, 1], dtype=object)}, owner="Thing")


def test_save_directory_writes_atomically_and_returns_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = io.save_directory("runs/ckpt", lambda d: _write_checkpoint(d, {"v": 1}))
    assert path == str(tmp_path / "runs" / "ckpt")
    assert io.read_state(tmp_path / "runs" / "ckpt") == {"v": 1}
    assert os.listdir(tmp_path / "runs") == ["ckpt"]


def test_save_directory_without_path_makes_a_temporary_directory():
    path = io.save_directory(None, lambda d: _write_checkpoint(d, {"v": 1}))
    assert os.path.basename(path).startswith("flywheel_checkpoint_")
    assert io.read_state(path) == {"v": 1}


def test_save_replaces_an_existing_checkpoint_and_accepts_an_empty_directory(tmp_path):
    target = tmp_path / "ckpt"
    target.mkdir()
    io.save_directory(target, lambda d: _write_checkpoint(d, {"v": 1}))
    io.save_directory(target, lambda d: _write_checkpoint(d, {"v": 2}))
    assert io.read_state(target) == {"v": 2}
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]


def test_failed_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    target = tmp_path / "ckpt"
    io.save_directory(target, lambda d: _write_checkpoint(d, {"v": np.arange(3)}))
    before = {name: (target / name).read_bytes() for name in os.listdir(target)}
    calls = []
    write_bytes = io.write_bytes

    def failing_write_bytes(path, data):
        calls.append(path.name)
        if len(calls) == 2:
            raise OSError("disk full")
        write_bytes(path, data)

    monkeypatch.setattr(io, "write_bytes", failing_write_bytes)
    with pytest.raises(OSError, match="disk full"):
        io.save_directory(target, lambda d: _write_checkpoint(d, {"v": np.arange(5)}))
    assert calls == [io.TENSORS_FILE, io.STATE_FILE]
    assert {name: (target / name).read_bytes() for name in os.listdir(target)} == before
    assert os.listdir(tmp_path) == ["ckpt"]  # no temporary directory left behind
    np.testing.assert_array_equal(io.read_state(target)["v"], np.arange(3))


def test_save_refuses_to_overwrite_other_files(tmp_path):
    (tmp_path / "results.csv").write_text("1,2\n")
    with pytest.raises(CheckpointError, match=r"is not empty and is not a flywheel checkpoint"):
        io.save_directory(tmp_path, lambda d: _write_checkpoint(d, {}))
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointError, match=r"it is a file, expected a directory path"):
        io.save_directory(tmp_path / "file", lambda d: _write_checkpoint(d, {}))
    assert (tmp_path / "results.csv").read_text() == "1,2\n"


def test_read_metadata_returns_what_was_written(tmp_path):
    _write_checkpoint(tmp_path, {}, {"class": "a.b:C", "components": ["x"]})
    metadata = io.read_metadata(tmp_path)
    assert metadata == {
        "format_version": 1,
        "class": "a.b:C",
        "components": ["x"],
        "checksums": {
            "state.safetensors": zlib.crc32((tmp_path / "state.safetensors").read_bytes()),
            "state.msgpack": zlib.crc32((tmp_path / "state.msgpack").read_bytes()),
        },
    }


def test_missing_path_raises(tmp_path):
    with pytest.raises(CheckpointError, match=r"No checkpoint at .*nowhere: the path does not exist\.$"):
        io.read_metadata(tmp_path / "nowhere")


def test_missing_component_names_the_parents_components(tmp_path):
    _write_checkpoint(tmp_path, {}, {"class": "a:B", "components": ["p0", "p1"]})
    with pytest.raises(CheckpointError, match=r"is a checkpoint with the components \['p0', 'p1'\]"):
        io.read_metadata(tmp_path / "p9")


def test_not_a_checkpoint_raises(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(CheckpointError, match=r"is not a flywheel checkpoint: it has no metadata\.json"):
        io.read_metadata(tmp_path)
    with pytest.raises(CheckpointError, match=r"notes\.txt is a file, not a checkpoint"):
        io.read_metadata(tmp_path / "notes.txt")


def test_missing_marker_means_incomplete(tmp_path):
    _write_checkpoint(tmp_path, {})
    (tmp_path / io.COMPLETE_MARKER).unlink()
    with pytest.raises(CheckpointError, match=r"is incomplete: it has no checkpoint_complete marker"):
        io.read_metadata(tmp_path)


def test_other_format_version_raises(tmp_path):
    _write_checkpoint(tmp_path, {})
    metadata = json.loads((tmp_path / io.METADATA_FILE).read_text())
    metadata.update(format_version=2, flywheel_version="9.0")
    (tmp_path / io.METADATA_FILE).write_text(json.dumps(metadata))
    with pytest.raises(
        CheckpointError,
        match=r"has format version 2 \(written by flywheel 9\.0\); this flywheel reads format version 1",
    ):
        io.read_metadata(tmp_path)


def test_corrupted_metadata_raises(tmp_path):
    _write_checkpoint(tmp_path, {})
    (tmp_path / io.METADATA_FILE).write_text('{"format_version": 1, "cla')
    with pytest.raises(CheckpointError, match=r"metadata\.json is corrupted \(JSONDecodeError"):
        io.read_metadata(tmp_path)


def test_truncated_state_files_raise_naming_the_file(tmp_path):
    _write_checkpoint(tmp_path, {"w": np.ones(100, np.float32), "n": list(range(100))})
    for name in (io.TENSORS_FILE, io.STATE_FILE):
        file = tmp_path / name
        data = file.read_bytes()
        file.write_bytes(data[:-10])
        with pytest.raises(
            CheckpointError,
            match=rf"{name} is corrupted or truncated: its CRC-32 checksum does not match the one in metadata\.json "
            rf"\({len(data) - 10} bytes read\)",
        ):
            io.read_state(tmp_path)
        file.write_bytes(data)
    assert io.read_state(tmp_path)["n"] == list(range(100))

    (tmp_path / io.STATE_FILE).unlink()
    with pytest.raises(CheckpointError, match=r"is missing its state file state\.msgpack"):
        io.read_state(tmp_path)


def test_a_flipped_byte_in_the_weights_is_detected(tmp_path):
    _write_checkpoint(tmp_path, {"w": np.ones(100, np.float32)})
    file = tmp_path / io.TENSORS_FILE
    data = bytearray(file.read_bytes())
    data[-7] ^= 0x01  # same length, still a valid safetensors file: only the checksum notices
    file.write_bytes(bytes(data))
    with pytest.raises(
        CheckpointError, match=r"state\.safetensors is corrupted or truncated: its CRC-32 checksum"
    ):
        io.read_state(tmp_path)
