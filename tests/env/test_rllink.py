"""RLlink, the external-env protocol: RLlib 2.60's wire format, numpy and spaces, and malformed input."""

from __future__ import annotations

import socket

import gymnasium as gym
import msgpack
import numpy as np
import pytest

from flywheel.env.external import RLlink, get_rllink_message, send_rllink_message


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_a_message_round_trips_with_arrays_scalars_and_spaces(pair):
    a, b = pair
    box = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    sent = {
        "type": RLlink.EPISODES.name,
        "obs": np.arange(6, dtype=np.float32).reshape(2, 3),
        "logp": np.float32(-0.25),
        "ret": np.float64(2.5),  # a float subclass: msgpack writes it as a float
        "done": np.array([True, False]),
        "nested": {"ids": ["a", "b"], "n": 3},
        "space": box,
    }
    send_rllink_message(a, sent)
    kind, body = get_rllink_message(b)
    assert kind is RLlink.EPISODES
    assert body["obs"].dtype == np.float32 and body["obs"].shape == (2, 3)
    np.testing.assert_array_equal(body["obs"], sent["obs"])
    assert body["obs"].flags.writeable
    assert body["logp"] == -0.25 and body["logp"].dtype == np.float32
    assert body["ret"] == 2.5 and type(body["ret"]) is float
    np.testing.assert_array_equal(body["done"], [True, False])
    assert body["nested"] == {"ids": ["a", "b"], "n": 3}
    assert body["space"] == box


def test_the_wire_format_is_rllibs_length_header_and_msgpack_numpy_layout(pair):
    a, b = pair
    send_rllink_message(a, {"type": "PING", "x": np.array([1.5, 2.5], np.float32)})
    raw = b.recv(1 << 16)
    header, body = raw[:8], raw[8:]
    assert header == str(len(body)).zfill(8).encode()
    decoded = msgpack.unpackb(body, raw=False)
    assert decoded["type"] == "PING"
    assert decoded["x"] == {
        b"nd": True, b"type": "<f4", b"kind": b"", b"shape": [2], b"data": np.array([1.5, 2.5], np.float32).tobytes()
    }  # fmt: skip


def test_a_message_rllib_s_client_would_send_is_read(pair):
    a, b = pair  # the bytes msgpack-numpy (RLlib's encoder) writes for {"type": "EPISODES", "r": float32[2]}
    array = {b"nd": True, b"type": "<f4", b"kind": b"", b"shape": (2,), b"data": np.float32([1, 2]).tobytes()}
    body = msgpack.packb({"type": "EPISODES", "r": array}, use_bin_type=True)
    a.sendall(framed(body))
    kind, message = get_rllink_message(b)
    assert kind is RLlink.EPISODES
    np.testing.assert_array_equal(message["r"], np.float32([1, 2]))


def test_object_arrays_are_refused_on_both_sides(pair):
    a, b = pair
    with pytest.raises(TypeError, match="numpy arrays of bool, int or float"):
        send_rllink_message(a, {"type": "PING", "x": np.array([object()])})
    # msgpack-numpy would unpickle an object array's bytes: this side never does.
    body = msgpack.packb(
        {
            "type": "EPISODES",
            "x": {b"nd": True, b"type": "|O", b"kind": b"O", b"shape": [1], b"data": b"cos\nsystem\n"},
        },
        use_bin_type=True,
    )
    a.sendall(framed(body))
    with pytest.raises(ConnectionError, match="only bool, integer and float arrays are read"):
        get_rllink_message(b)


def framed(body: bytes) -> bytes:
    return str(len(body)).zfill(8).encode() + body


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"12ab5678", "expected an 8-digit length header, got b'12ab5678'"),
        (framed(msgpack.packb([1, 2])), "expected a map with a 'type' key, got list"),
        (framed(msgpack.packb({"type": "NOPE"})), "'NOPE' is not a valid RLlink"),
        (framed(b"\xc1"), r"the body is not msgpack \(FormatError\)"),
        (b"0000", r"the peer closed the connection \(4 of 8 bytes read\)"),
    ],
)
def test_malformed_input_is_a_connection_error_naming_the_problem(pair, raw, match):
    a, b = pair
    a.sendall(raw)
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(ConnectionError, match=match):
        get_rllink_message(b)
