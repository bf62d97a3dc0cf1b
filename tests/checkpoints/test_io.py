"""State files: exact round trips, safetensors for arrays, and one clear error per kind of damage."""

import os

import numpy as np
import pytest

from flywheel.checkpoints import io
from flywheel.errors import CheckpointError


def write_checkpoint(directory, state, metadata=None):
    """A one-component checkpoint holding `state` (what `Checkpointable._write_to` writes)."""
    checksums = io.write_state(directory, state, owner="Thing")
    metadata = metadata or {"class": "x:Y", "kind": "Y", "components": []}
    return io.write_metadata(directory, {**metadata, "checksums": checksums})


def _read_state(directory):
    from flywheel.checkpoints.tree import read_tree

    return io.read_state(directory, read_tree(directory).metadata)


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
    write_checkpoint(tmp_path, state)
    back = _read_state(tmp_path)

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

    write_checkpoint(tmp_path, {"w": {"a": np.ones(3, np.float32)}})
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


def test_truncated_state_files_raise_naming_the_file(tmp_path):
    write_checkpoint(tmp_path, {"w": np.ones(100, np.float32), "n": list(range(100))})
    for name in (io.TENSORS_FILE, io.STATE_FILE):
        file = tmp_path / name
        data = file.read_bytes()
        file.write_bytes(data[:-10])
        with pytest.raises(
            CheckpointError,
            match=rf"{name} is corrupted or truncated: its CRC-32 checksum does not match the one in metadata\.json "
            rf"\({len(data) - 10} bytes read\)",
        ):
            _read_state(tmp_path)
        file.write_bytes(data)
    assert _read_state(tmp_path)["n"] == list(range(100))

    (tmp_path / io.STATE_FILE).unlink()
    with pytest.raises(CheckpointError, match=r"is missing its file state\.msgpack"):
        _read_state(tmp_path)


def test_a_flipped_byte_in_the_weights_is_detected(tmp_path):
    write_checkpoint(tmp_path, {"w": np.ones(100, np.float32)})
    file = tmp_path / io.TENSORS_FILE
    data = bytearray(file.read_bytes())
    data[-7] ^= 0x01  # same length, still a valid safetensors file: only the checksum notices
    file.write_bytes(bytes(data))
    with pytest.raises(
        CheckpointError, match=r"state\.safetensors is corrupted or truncated: its CRC-32 checksum"
    ):
        _read_state(tmp_path)


def test_symlinks_and_special_files_are_not_read(tmp_path):
    write_checkpoint(tmp_path, {"w": np.ones(3, np.float32)})
    outside = tmp_path.parent / f"{tmp_path.name}-outside.msgpack"
    (tmp_path / io.STATE_FILE).rename(outside)
    (tmp_path / io.STATE_FILE).symlink_to(outside)
    with pytest.raises(CheckpointError, match=r"state\.msgpack cannot be read .*no symlinks"):
        _read_state(tmp_path)
    (tmp_path / io.STATE_FILE).unlink()
    os.mkfifo(tmp_path / io.STATE_FILE)  # reading a FIFO would block forever
    with pytest.raises(CheckpointError, match=r"state\.msgpack is not a regular file"):
        _read_state(tmp_path)
