"""RLlink: the messages between a training server and an external env that acts on its own.

An external env (a simulator, a game engine, a robot) connects over TCP, runs the policy itself, and
sends whole episodes; the server (`EnvRunnerServerForExternalInference`) trains on them and sends the
new weights back. The wire format is RLlib 2.60's, so clients written for RLlib (e.g. a C++ plugin)
talk to flywheel unchanged:

    8 ASCII digits: the body's length in bytes, zero-padded  |  body: a msgpack map with a "type" key

Numpy arrays and scalars travel in msgpack-numpy's layout (`{b"nd": True, b"type": dtype, b"kind": b"",
b"shape": shape, b"data": bytes}`, scalars with `b"nd": False`), for bool, integer and float dtypes only:
msgpack-numpy would pickle object arrays, and the server unpickles nothing a client sends (the client unpickles
the config the server sends, as with RLlib). A gymnasium
space (an episode's buffers may carry one) travels as a plain description (`flywheel.checkpoints.codec`).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from enum import Enum
from typing import Any, cast

import gymnasium as gym
import msgpack
import numpy as np

from flywheel.checkpoints.codec import decode_space, encode_space

HEADER_BYTES = 8
_SPACE_TAG = "__space__"
_PLAIN_KINDS = "biuf"


class RLlink(Enum):
    """The message types (RLlib 2.60's names and values)."""

    PROTOCOL_VERSION = "0.0.1"
    # Client (external env) -> server.
    PING = "PING"
    EPISODES = "EPISODES"  # a list of episode states, as `sample()` would return them
    GET_STATE = "GET_STATE"  # asks for the module's weights
    GET_CONFIG = "GET_CONFIG"  # asks for the algorithm config (pickled)
    EPISODES_AND_GET_STATE = "EPISODES_AND_GET_STATE"  # episodes; the client then waits for SET_STATE
    # Server -> client.
    PONG = "PONG"
    SET_STATE = "SET_STATE"
    SET_CONFIG = "SET_CONFIG"

    def __str__(self) -> str:
        return self.name


def send_rllink_message(sock: socket.socket, message: Mapping[str, object]) -> None:
    """Sends `message` (a dict with a "type" key, e.g. `{"type": RLlink.PING.name}`) with its length header.

    Raises ConnectionError when the socket fails.
    """
    body = cast(bytes, msgpack.packb(message, default=_encode, use_bin_type=True))
    if len(body) >= 10**HEADER_BYTES:
        raise ValueError(
            f"An RLlink message holds at most {10**HEADER_BYTES - 1} bytes, got {len(body)} "
            f"({message.get('type')}). Fix: send fewer episodes per message."
        )
    try:
        sock.sendall(str(len(body)).zfill(HEADER_BYTES).encode("ascii") + body)
    except OSError as err:
        raise ConnectionError(
            f"Could not send an RLlink {message.get('type')} message on {sock}: {err}"
        ) from err


def get_rllink_message(sock: socket.socket) -> tuple[RLlink, dict[str, Any]]:
    """Receives one message: `(its RLlink type, the rest of its body)`.

    Raises ConnectionError when the peer closes the socket, or sends a header that is not 8 digits,
    a body that is not msgpack, or a body without a known "type".
    """
    try:
        header = _receive(sock, HEADER_BYTES)
        if not header.isdigit():
            raise ValueError(f"expected an 8-digit length header, got {header!r}")
        message = msgpack.unpackb(_receive(sock, int(header)), object_hook=_decode, raw=False)
        if not isinstance(message, dict) or "type" not in message:
            raise ValueError(f"expected a map with a 'type' key, got {type(message).__name__}")
        return RLlink(message.pop("type")), message
    except Exception as err:  # any malformed input: the peer's fault, reported as RLlib does
        reason = str(err) or f"the body is not msgpack ({type(err).__name__})"
        raise ConnectionError(f"Could not receive an RLlink message on {sock}: {reason}") from err


def _receive(sock: socket.socket, num_bytes: int) -> bytes:
    data = bytearray()
    while len(data) < num_bytes:
        packet = sock.recv(num_bytes - len(data))
        if not packet:
            raise ConnectionError(f"the peer closed the connection ({len(data)} of {num_bytes} bytes read)")
        data += packet
    return bytes(data)


def _encode(value: object) -> object:
    if isinstance(value, gym.Space):
        return {_SPACE_TAG: encode_space(value, "an episode's space")}
    if isinstance(value, np.ndarray | np.generic) and value.dtype.kind in _PLAIN_KINDS:
        array = np.ascontiguousarray(value)
        if isinstance(value, np.generic):
            return {b"nd": False, b"type": array.dtype.str, b"data": array.tobytes()}
        return {
            b"nd": True,
            b"type": array.dtype.str,
            b"kind": b"",
            b"shape": list(array.shape),
            b"data": array.tobytes(),
        }
    raise TypeError(
        f"An RLlink message can hold dicts, lists, strings, numbers, bytes, numpy arrays of bool, int or "
        f"float, and gymnasium spaces; got a {type(value).__name__}. Fix: convert it to one of these."
    )


def _decode(value: dict[str | bytes, object]) -> object:
    if _SPACE_TAG in value:
        return decode_space(cast(dict, value[_SPACE_TAG]))
    if b"nd" not in value:
        return value
    dtype = np.dtype(str(value[b"type"]))
    if dtype.kind not in _PLAIN_KINDS or value.get(b"kind", b"") != b"":
        raise ValueError(
            f"an array of dtype {value[b'type']!r}: only bool, integer and float arrays are read"
        )
    data = np.frombuffer(cast(bytes, value[b"data"]), dtype=dtype)
    if value[b"nd"] is True:
        return data.reshape(cast(list[int], value[b"shape"])).copy()
    return data[0]
