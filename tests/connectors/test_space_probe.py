"""A piece that changes the observation shape without declaring it: the runner's forward pass fails
with a ConnectorError that names the piece, the shape it produced and the fix."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import ConnectorV2, PPOConfig, SingleAgentEnvRunner
from flywheel.connectors.env_to_module import FlattenObservations, MeanStdFilter
from flywheel.errors import ConnectorError


class AppendOne(ConnectorV2):
    """Appends a 1 to every observation and does not declare it."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in episodes:
            episode.set_observations(
                new_data=np.append(episode.get_observations(-1), np.float32(1)), at_indices=-1
            )
        return batch


class AppendOneDeclared(AppendOne):
    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        return gym.spaces.Box(-np.inf, np.inf, (input_observation_space.shape[0] + 1,), np.float32)


def runner(*pieces):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(env_to_module_connector=lambda env, spaces, device: list(pieces))
    )
    return SingleAgentEnvRunner(config=config)


def test_an_undeclared_shape_change_names_the_piece_its_shape_and_the_fix():
    sampler = runner(MeanStdFilter(), AppendOne())
    with pytest.raises(ConnectorError) as raised:
        sampler.sample(num_timesteps=1)
    message = str(raised.value)
    assert message.startswith(
        "Connector piece AppendOne hands on observations of shape (5,), but its observation space (what the "
        "RLModule is built for) has shape (4,): the piece changes the observation space without declaring it. "
        "Fix: override recompute_output_observation_space(input_observation_space, input_action_space) in "
        "AppendOne to return the space of what it produces (see docs/concepts/connectors.md). (The module's "
        "forward pass failed: mat1 and mat2 shapes cannot be multiplied (1x5 and 4x"
    )
    assert isinstance(raised.value.__cause__, RuntimeError)
    # The probe ran on copies: the runner's filter saw the one real observation only.
    assert sampler.env_to_module[0].get_state()["delta"]["count"] == 1
    sampler.stop()


def test_the_probe_names_the_first_piece_that_breaks_its_space_after_pieces_that_keep_theirs():
    sampler = runner(AppendOneDeclared(), FlattenObservations(), AppendOne())
    assert sampler.env_to_module.observation_space.shape == (5,)
    with pytest.raises(
        ConnectorError,
        match=r"^Connector piece AppendOne hands on observations of shape \(6,\), but .* shape \(5,\)",
    ):
        sampler.sample(num_timesteps=1)
    sampler.stop()


def test_a_declared_change_samples_and_other_forward_errors_pass_unchanged(monkeypatch):
    sampler = runner(AppendOneDeclared())
    (episode,) = sampler.sample(num_timesteps=2, random_actions=False)
    assert episode.get_observations(-1).shape == (5,) and episode.get_observations(-1)[-1] == 1.0

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the module")

    monkeypatch.setattr(type(sampler.module), "forward_exploration", broken)
    with pytest.raises(RuntimeError, match="^a bug in the module$"):
        sampler.sample(num_timesteps=1)
    sampler.stop()
