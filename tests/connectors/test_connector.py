"""ConnectorV2: output spaces follow the input spaces, batch items, default state hooks."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.connectors import ConnectorV2


class Identity(ConnectorV2):
    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs):
        return batch


class AppendActionDim(ConnectorV2):
    """Output obs = input obs with one more entry per action category (needs both spaces)."""

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        n = input_observation_space.shape[0] + input_action_space.n
        return gym.spaces.Box(-1.0, 1.0, (n,), np.float32)

    def recompute_output_action_space(self, input_observation_space, input_action_space):
        return gym.spaces.Discrete(input_action_space.n + 1)

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs):
        return batch


BOX3 = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


def test_default_output_spaces_are_the_input_spaces():
    piece = Identity(BOX3, gym.spaces.Discrete(2))
    assert piece.input_observation_space is BOX3
    assert piece.observation_space is BOX3
    assert piece.action_space == gym.spaces.Discrete(2)


def test_unknown_input_spaces_give_unknown_output_spaces():
    piece = Identity()
    assert piece.observation_space is None and piece.action_space is None


def test_setters_recompute_the_output_spaces():
    piece = AppendActionDim(BOX3, gym.spaces.Discrete(2))
    assert piece.observation_space.shape == (5,)
    assert piece.action_space == gym.spaces.Discrete(3)
    piece.input_action_space = gym.spaces.Discrete(4)
    assert piece.observation_space.shape == (7,)
    assert piece.action_space == gym.spaces.Discrete(5)
    piece.input_observation_space = gym.spaces.Box(-1.0, 1.0, (10,), np.float32)
    assert piece.observation_space.shape == (14,)
    piece.set_input_spaces(BOX3, gym.spaces.Discrete(1))
    assert piece.observation_space.shape == (4,)
    assert piece.action_space == gym.spaces.Discrete(2)


def test_default_state_hooks():
    piece = Identity()
    assert piece.get_state() == {}
    piece.set_state({"ignored": 1})
    piece.reset_state()
    assert piece.merge_states([{"a": 1}, {"a": 2}]) == {"a": 1}
    assert piece.merge_states([]) == {}


def test_name_and_repr():
    assert Identity().name == "Identity"
    assert repr(Identity()) == "Identity()"


def test_call_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        ConnectorV2()
