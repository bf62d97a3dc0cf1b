"""Observations an env-to-module piece rewrites in the episodes reach the learner as rewritten: every
row of the episodes a runner returns, the final observation of a finished episode, and the bootstrap
value that GAE computes from it (RLlib's `prev_actions_prev_rewards.py` example: `PrevActionsPrevRewards`
then `FlattenObservations`)."""

import numpy as np
import torch

from flywheel import MultiAgentEnvRunner
from flywheel.columns import Columns
from flywheel.connectors.env_to_module import FlattenObservations, PrevActionsPrevRewards
from flywheel.core.rl_module import DefaultModelConfig
from flywheel.env import make_multi_agent
from flywheel.testing import CountingEnv
from flywheel.typing import DEFAULT_MODULE_ID

from .conftest import counting_config


def prev_pieces(multi_agent=False):
    def connector(env, spaces=None, device=None):
        return [PrevActionsPrevRewards(multi_agent=multi_agent), FlattenObservations(multi_agent=multi_agent)]

    return connector


def expected_rows(episode, first_t=0):
    """CountingEnv's rows `[t, one-hot(previous action), previous reward (= t)]`; zeros before the start."""
    rows = []
    actions = episode.get_actions(slice(-len(episode) - 1, None)) if first_t else episode.get_actions()
    for j in range(len(episode) + 1):
        t = first_t + j
        if t == 0:
            rows.append([0.0, 0.0, 0.0, 0.0])
        else:
            action = actions[j - 1] if not first_t else actions[j]
            rows.append([t, float(action == 0), float(action == 1), t])
    return rows


def test_the_runner_returns_rewritten_rows_final_observation_included(make_runner):
    config = counting_config(episode_len=3, env_to_module_connector=prev_pieces())
    runner = make_runner(config)
    assert runner.get_spaces()[DEFAULT_MODULE_ID][0].shape == (4,)
    finished, chunk = runner.sample(num_timesteps=5)
    assert finished.is_terminated and len(finished) == 3 and not chunk.is_done and len(chunk) == 2
    assert finished.get_observations().shape == (4, 4)  # the final observation (t = 3) is rewritten too
    np.testing.assert_array_equal(finished.get_observations(), expected_rows(finished))
    np.testing.assert_array_equal(chunk.get_observations(), expected_rows(chunk))
    # The next chunk continues the episode at t = 2; its first row is the one the module acted on.
    [continued] = runner.sample(num_timesteps=1)
    np.testing.assert_array_equal(continued.get_observations(), expected_rows(continued, first_t=2))


def test_the_learner_trains_on_the_rows_and_bootstraps_from_the_rewritten_final_observation(make_runner):
    config = counting_config(episode_len=3, truncate=True, env_to_module_connector=prev_pieces())
    runner = make_runner(config)
    finished, chunk = runner.sample(num_timesteps=5)
    learner = config.build_learner(spaces=runner.get_spaces())
    # Read before the pipeline runs: it extends the episodes by their bootstrap timesteps in place.
    rows = np.concatenate([expected_rows(finished)[:-1], expected_rows(chunk)[:-1]])
    with torch.no_grad():
        values = learner.module[DEFAULT_MODULE_ID].compute_values(
            {Columns.OBS: torch.tensor(np.asarray(expected_rows(finished)), dtype=torch.float32)}
        )
    batch = learner.learner_connector(
        rl_module=learner.module, batch={}, episodes=[finished, chunk], shared_data={}
    )[DEFAULT_MODULE_ID]
    np.testing.assert_array_equal(batch[Columns.OBS].cpu().numpy(), rows)  # one row per step
    # The truncated episode's last step bootstraps from V(final row): target = r + gamma * V(s_3).
    gamma = config.gamma
    assert batch[Columns.VALUE_TARGETS][2].item() == torch.tensor(3.0 + gamma * values[3].item()).item()


def test_ppo_with_an_lstm_trains_on_the_examples_pieces():
    """The configuration of RLlib's example (an LSTM, shared value layers) used to stop in GAE's value
    pass with `mat1 and mat2 shapes cannot be multiplied (580x2 and 5x32)`."""
    config = counting_config(episode_len=7, env_to_module_connector=prev_pieces()).training(
        train_batch_size=64, minibatch_size=32, num_epochs=1
    )
    config = config.rl_module(
        model_config=DefaultModelConfig(use_lstm=True, max_seq_len=4, fcnet_hiddens=[8], vf_share_layers=True)
    )
    algo = config.build_algo()
    try:
        assert algo.get_module().observation_space.shape == (4,)
        result = algo.train()["learners"][DEFAULT_MODULE_ID]
    finally:
        algo.stop()
    assert result["num_module_steps_trained"] >= 64 and np.isfinite(result["total_loss"])


def test_multi_agent_rows_per_agent_final_observations_included():
    config = (
        counting_config(env=make_multi_agent(CountingEnv), env_to_module_connector=prev_pieces(True))
        .environment(env_config={"num_agents": 2, "episode_len": 3})
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: f"p{agent_id}"
        )
    )
    runner = MultiAgentEnvRunner(config=config)
    try:
        assert {mid: runner.get_spaces()[mid][0].shape for mid in ("p0", "p1")} == {"p0": (4,), "p1": (4,)}
        finished = runner.sample(num_episodes=1)[0]
    finally:
        runner.stop()
    for agent_id in (0, 1):
        agent_episode = finished.agent_episodes[agent_id]
        assert agent_episode.get_observations().shape == (4, 4)
        np.testing.assert_array_equal(agent_episode.get_observations(), expected_rows(agent_episode))
