"""NormalizeAndClipActions: ACTIONS_FOR_ENV unsquashed / clipped into the action space; ACTIONS kept."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.columns import Columns
from flywheel.connectors.module_to_env import NormalizeAndClipActions
from flywheel.errors import ConnectorError

BOX = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 10.0], np.float32))
ACTIONS = np.array([[-1.0, 1.0], [0.0, 0.0], [2.0, -3.0]], np.float32)


def call(piece, actions):
    return piece(rl_module=None, batch={Columns.ACTIONS: actions}, episodes=[])


def test_normalize_unsquashes_from_minus_one_one_and_clips_to_the_bounds():
    batch = call(NormalizeAndClipActions(None, BOX), ACTIONS)
    assert batch[Columns.ACTIONS_FOR_ENV].dtype == np.float32
    np.testing.assert_array_equal(batch[Columns.ACTIONS_FOR_ENV], [[-2.0, 10.0], [0.0, 5.0], [2.0, 0.0]])
    assert batch[Columns.ACTIONS] is ACTIONS


def test_clip_only():
    batch = call(NormalizeAndClipActions(None, BOX, normalize_actions=False, clip_actions=True), ACTIONS)
    np.testing.assert_array_equal(batch[Columns.ACTIONS_FOR_ENV], [[-1.0, 1.0], [0.0, 0.0], [2.0, 0.0]])


def test_neither_sends_the_actions_unchanged():
    batch = call(NormalizeAndClipActions(None, BOX, normalize_actions=False), ACTIONS)
    assert batch[Columns.ACTIONS_FOR_ENV] is ACTIONS


def test_unbounded_dimensions_pass_through_the_unsquash():
    space = gym.spaces.Box(np.array([-np.inf, 0.0], np.float32), np.array([np.inf, 4.0], np.float32))
    batch = call(NormalizeAndClipActions(None, space), np.array([[7.5, 0.5]], np.float32))
    np.testing.assert_array_equal(batch[Columns.ACTIONS_FOR_ENV], [[7.5, 3.0]])


def test_integer_box_is_clipped_not_unsquashed():
    space = gym.spaces.Box(0, 3, (1,), np.int64)
    piece = NormalizeAndClipActions(None, space, clip_actions=True)
    np.testing.assert_array_equal(call(piece, np.array([[5], [-1]]))[Columns.ACTIONS_FOR_ENV], [[3], [0]])


def test_non_box_spaces_send_the_actions_unchanged():
    actions = np.array([0, 2])
    assert (
        call(NormalizeAndClipActions(None, gym.spaces.Discrete(3)), actions)[Columns.ACTIONS_FOR_ENV]
        is actions
    )


def test_a_missing_action_space_is_explained():
    with pytest.raises(ConnectorError, match=r"NormalizeAndClipActions has no input action space"):
        call(NormalizeAndClipActions(), ACTIONS)


def test_setting_the_action_space_later_takes_effect():
    piece = NormalizeAndClipActions()
    piece.input_action_space = BOX
    np.testing.assert_array_equal(call(piece, ACTIONS[:1])[Columns.ACTIONS_FOR_ENV], [[-2.0, 10.0]])
