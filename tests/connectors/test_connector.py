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


def _built_in_pieces():
    import importlib
    import inspect
    import pkgutil

    import flywheel.connectors as package

    found = set()
    for info in pkgutil.walk_packages(package.__path__, "flywheel.connectors."):
        for obj in vars(importlib.import_module(info.name)).values():
            if inspect.isclass(obj) and issubclass(obj, ConnectorV2) and not inspect.isabstract(obj):
                found.add(obj)
    return sorted(found, key=lambda cls: (cls.__module__, cls.__name__))


@pytest.mark.parametrize("cls", _built_in_pieces(), ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_every_built_in_piece_takes_rllibs_constructor_arguments(cls):
    act = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    piece = cls(BOX3, act, an_unknown_forward_compatible_kwarg=1)
    assert piece.input_observation_space is BOX3 and piece.input_action_space is act
    assert cls(input_observation_space=BOX3).input_observation_space is BOX3


class Curiosity(ConnectorV2):
    """Written as RLlib's example pieces are: spaces positionally to super(), own options keyword-only."""

    def __init__(self, input_observation_space=None, input_action_space=None, *, coeff=1.0, **kwargs):
        super().__init__(input_observation_space, input_action_space)
        self.coeff = coeff

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        return batch


def test_an_rllib_style_piece_is_rebuilt_from_its_constructor_arguments(tmp_path):
    piece = Curiosity(coeff=0.5)
    restored = ConnectorV2.from_checkpoint(piece.save_to_path(tmp_path / "piece"), classes=[Curiosity])
    assert type(restored) is Curiosity and restored.coeff == 0.5


def test_env_to_module_and_module_to_env_hooks_get_rllibs_arguments():
    from flywheel import PPOConfig, SingleAgentEnvRunner

    seen = {}

    def env_to_module(env, spaces, device):
        seen["e2m"] = (env, spaces, device)
        return []

    def module_to_env(env, spaces):
        seen["m2e"] = (env, spaces)
        return []

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_envs_per_env_runner=2,
            env_to_module_connector=env_to_module,
            module_to_env_connector=module_to_env,
        )
    )
    runner = SingleAgentEnvRunner(config)
    env, spaces, device = seen["e2m"]
    assert env is runner.env and device is None and seen["m2e"] == (runner.env, spaces)
    assert spaces["__env_single__"] == (runner.env.single_observation_space, runner.env.single_action_space)
    assert spaces["__env__"] == (runner.env.observation_space, runner.env.action_space)
    assert spaces["__env__"][0].shape == (2, 4)
    runner.stop()
