"""FlattenObservations: Dict/Tuple/n-D Box/Discrete observations → one float32 row, written back."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.connectors.env_to_module import FlattenObservations
from flywheel.errors import ConnectorError

from ..conftest import episode_from

DICT_SPACE = gym.spaces.Dict(
    {"pos": gym.spaces.Box(-2.0, 3.0, (2, 2), np.float32), "mode": gym.spaces.Discrete(3, start=1)}
)


def flatten(piece, observations):
    episodes = [episode_from([obs]) for obs in observations]
    assert piece(rl_module=None, batch={}, episodes=episodes) == {}
    return [episode.get_observations(-1) for episode in episodes]


def test_dict_of_box_and_discrete():
    piece = FlattenObservations(DICT_SPACE)
    # gymnasium sorts Dict keys: "mode" (one-hot of 3) comes before "pos" (4 values).
    assert piece.observation_space == gym.spaces.Box(
        np.array([0, 0, 0, -2, -2, -2, -2], np.float32),
        np.array([1, 1, 1, 3, 3, 3, 3], np.float32),
        (7,),
        np.float32,
    )
    rows = flatten(
        piece,
        [
            {"pos": np.array([[1.0, 2.0], [3.0, -1.0]], np.float32), "mode": 3},
            {"pos": np.zeros((2, 2), np.float32), "mode": np.int64(1)},
        ],
    )
    assert rows[0].dtype == np.float32 and rows[0].shape == (7,)
    np.testing.assert_array_equal(rows[0], [0, 0, 1, 1, 2, 3, -1])
    np.testing.assert_array_equal(rows[1], [1, 0, 0, 0, 0, 0, 0])


def test_nested_tuple_with_multi_discrete_and_multi_binary():
    space = gym.spaces.Tuple(
        (
            gym.spaces.MultiDiscrete([2, 3]),
            gym.spaces.Dict(
                {"b": gym.spaces.MultiBinary(2), "x": gym.spaces.Box(0.0, 1.0, (1,), np.float64)}
            ),
        )
    )
    piece = FlattenObservations(space)
    assert piece.observation_space.shape == (8,)
    (row,) = flatten(piece, [(np.array([1, 2]), {"b": np.array([1, 0], np.int8), "x": np.array([0.5])})])
    np.testing.assert_array_equal(row, [0, 1, 0, 0, 1, 1, 0, 0.5])


def test_image_box_and_plain_discrete():
    piece = FlattenObservations(gym.spaces.Box(0, 255, (2, 2, 1), np.uint8))
    assert piece.observation_space == gym.spaces.Box(0.0, 255.0, (4,), np.float32)
    (row,) = flatten(piece, [np.array([[[1], [2]], [[3], [4]]], np.uint8)])
    assert row.dtype == np.float32
    np.testing.assert_array_equal(row, [1, 2, 3, 4])

    piece = FlattenObservations(gym.spaces.Discrete(4))
    np.testing.assert_array_equal(flatten(piece, [2, 0]), [[0, 0, 1, 0], [1, 0, 0, 0]])


def test_unsupported_leaf_names_its_place():
    space = gym.spaces.Dict({"text": gym.spaces.Text(5)})
    with pytest.raises(
        ConnectorError,
        match=r"FlattenObservations handles Box, MultiBinary, Discrete, MultiDiscrete and Dict/Tuple of them, "
        r"got Text\(.*\) at \['text'\]\.",
    ):
        FlattenObservations(space)
