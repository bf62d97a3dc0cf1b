"""SingleAgentEnvRunner.sample(): exact episode contents on the counting envs, chunking, bounds, resets."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, PPOConfig
from flywheel.errors import ArgumentError

from .conftest import VaryingLengthEnv, counting_config, obs_of, rewards_of


def test_one_env_random_actions_exact_episodes(make_runner):
    runner = make_runner(counting_config(episode_len=5))
    done, ongoing = runner.sample(num_timesteps=7, random_actions=True)

    assert (done.t_started, done.t, len(done)) == (0, 5, 5)
    assert obs_of(done) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # the final observation [5] included
    assert rewards_of(done) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert (done.is_terminated, done.is_truncated) == (True, False)
    assert (ongoing.t_started, ongoing.t, len(ongoing)) == (0, 2, 2)
    assert obs_of(ongoing) == [0.0, 1.0, 2.0]
    assert rewards_of(ongoing) == [1.0, 2.0]
    assert (ongoing.is_terminated, ongoing.is_truncated) == (False, False)
    for episode in (done, ongoing):
        assert episode.is_numpy
        actions = episode.get_actions()
        assert actions.shape == (len(episode),) and actions.dtype == np.int64
        assert set(actions.tolist()) <= {0, 1}
        # Random actions have no model outputs besides the weights that were current.
        assert sorted(episode.extra_model_outputs) == [Columns.WEIGHTS_SEQ_NO]
        assert episode.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO).tolist() == [0] * len(episode)
    assert done.id_ != ongoing.id_


def test_truncated_episodes_are_not_terminated(make_runner):
    runner = make_runner(counting_config(episode_len=3, truncate=True))
    (episode,) = runner.sample(num_timesteps=3, random_actions=True)
    assert (episode.is_terminated, episode.is_truncated, len(episode)) == (False, True, 3)
    assert obs_of(episode) == [0.0, 1.0, 2.0, 3.0]


def test_next_sample_continues_the_ongoing_episode(make_runner):
    runner = make_runner(counting_config(episode_len=5))
    first = runner.sample(num_timesteps=7, random_actions=True)[1]
    continued, new = runner.sample(num_timesteps=7)

    assert continued.id_ == first.id_
    assert (continued.t_started, continued.t, len(continued)) == (2, 5, 3)
    assert obs_of(continued) == [2.0, 3.0, 4.0, 5.0]
    assert rewards_of(continued) == [3.0, 4.0, 5.0]
    assert continued.is_terminated
    # Lookback (episode_lookback_horizon=1): the previous chunk's last step.
    assert continued.get_observations(-1, neg_index_as_lookback=True).tolist() == [1.0]
    assert continued.get_rewards(-1, neg_index_as_lookback=True) == 2.0
    assert continued.get_actions(-1, neg_index_as_lookback=True) == first.get_actions(-1)
    assert (new.t_started, new.t, obs_of(new)) == (0, 4, [0.0, 1.0, 2.0, 3.0, 4.0])
    assert new.id_ not in (first.id_, continued.id_)


@pytest.mark.parametrize("horizon", [1, 3])
def test_cut_chunks_carry_episode_lookback_horizon_steps(make_runner, horizon):
    runner = make_runner(counting_config(episode_len=10, episode_lookback_horizon=horizon))
    (first,) = runner.sample(num_timesteps=4, random_actions=True)
    (second,) = runner.sample(num_timesteps=2, random_actions=True)

    assert (second.t_started, obs_of(second), rewards_of(second)) == (4, [4.0, 5.0, 6.0], [5.0, 6.0])
    lookback = slice(-horizon, 0)
    lookback_obs = second.get_observations(lookback, neg_index_as_lookback=True).ravel().tolist()
    lookback_rewards = second.get_rewards(lookback, neg_index_as_lookback=True).tolist()
    lookback_actions = second.get_actions(lookback, neg_index_as_lookback=True).tolist()
    assert lookback_obs == [1.0, 2.0, 3.0][-horizon:]
    assert lookback_rewards == [2.0, 3.0, 4.0][-horizon:]
    assert lookback_actions == first.get_actions().tolist()[-horizon:]
    seq_nos = second.get_extra_model_outputs(Columns.WEIGHTS_SEQ_NO, lookback, neg_index_as_lookback=True)
    assert seq_nos.tolist() == [0] * horizon
    # Nothing older than the horizon is kept.
    assert second.get_rewards(-horizon - 1, neg_index_as_lookback=True, fill=-1.0) == -1.0


def test_three_envs_exact_episodes_in_finishing_order(make_runner):
    runner = make_runner(counting_config(env=VaryingLengthEnv, num_envs=3))  # lengths 2, 3, 4
    episodes = runner.sample(num_timesteps=10, random_actions=True)

    # 4 vector steps (12 env steps). Finished: env 0 at steps 2 and 4, env 1 at 3, env 2 at 4;
    # then the cut chunks of ongoing episodes with steps (env 1's second episode, 1 step).
    assert [obs_of(e) for e in episodes] == [
        [0.0, 1.0, 2.0],
        [0.0, 1.0, 2.0, 3.0],
        [0.0, 1.0, 2.0],
        [0.0, 1.0, 2.0, 3.0, 4.0],
        [0.0, 1.0],
    ]
    assert [e.is_terminated for e in episodes] == [True, True, True, True, False]
    assert [rewards_of(e) for e in episodes][3] == [1.0, 2.0, 3.0, 4.0]
    assert sum(len(e) for e in episodes) == 12
    assert len({e.id_ for e in episodes}) == 5
    cut = episodes[-1]

    # One more vector step: every sub-env's ongoing episode comes back as a chunk, in env order.
    chunks = runner.sample(num_timesteps=3, random_actions=True)
    assert [(e.t_started, obs_of(e)) for e in chunks] == [(0, [0.0, 1.0]), (1, [1.0, 2.0]), (0, [0.0, 1.0])]
    assert chunks[1].id_ == cut.id_


@pytest.mark.parametrize(("num_timesteps", "expected"), [(1, 3), (3, 3), (4, 6), (10, 12), (12, 12)])
def test_num_timesteps_bounds(make_runner, num_timesteps, expected):
    runner = make_runner(counting_config(num_envs=3, episode_len=4))
    episodes = runner.sample(num_timesteps=num_timesteps, random_actions=True)
    steps = sum(len(e) for e in episodes)
    assert steps == expected == 3 * math.ceil(num_timesteps / 3)
    assert num_timesteps <= steps < num_timesteps + 3


def test_default_sample_size_is_rollout_fragment_length_per_sub_env(make_runner):
    runner = make_runner(counting_config(num_envs=2, episode_len=100, rollout_fragment_length=4))
    assert sum(len(e) for e in runner.sample(random_actions=True)) == 8


def test_num_episodes_returns_exactly_that_many_finished_episodes(make_runner):
    runner = make_runner(counting_config(env=VaryingLengthEnv, num_envs=3))
    episodes = runner.sample(num_episodes=4, random_actions=True)
    assert [len(e) for e in episodes] == [2, 3, 2, 4]
    assert all(e.is_done and e.t_started == 0 and e.is_numpy for e in episodes)

    # Two episodes finish at step 4; only the first (env 0) is needed for 3.
    assert [len(e) for e in runner.sample(num_episodes=3, random_actions=True)] == [2, 3, 2]
    assert [len(e) for e in runner.sample(num_episodes=1, random_actions=True)] == [2]
    # Episode sampling drops the ongoing episodes: the next call starts fresh ones.
    chunks = runner.sample(num_timesteps=3, random_actions=True)
    assert [(e.t_started, obs_of(e)) for e in chunks] == [(0, [0.0, 1.0])] * 3


def test_num_timesteps_and_num_episodes_together_are_rejected(make_runner):
    runner = make_runner(counting_config())
    # RLlib asserts here: the error is an AssertionError as well as flywheel's ArgumentError (a ValueError).
    with pytest.raises(
        AssertionError,
        match=r"sample\(\) takes num_timesteps or num_episodes, not both; got num_timesteps=1 and num_episodes=2\. "
        r"Fix: pass one of them",
    ) as caught:
        runner.sample(num_timesteps=1, num_episodes=2)
    assert isinstance(caught.value, ArgumentError)


def test_force_reset_starts_new_episodes(make_runner):
    runner = make_runner(counting_config(episode_len=10))
    (first,) = runner.sample(num_timesteps=2, random_actions=True)
    (second,) = runner.sample(num_timesteps=2, random_actions=True, force_reset=True)
    assert second.id_ != first.id_
    assert (second.t_started, obs_of(second)) == (0, [0.0, 1.0, 2.0])
    (third,) = runner.sample(num_timesteps=2, random_actions=True)
    assert (third.id_, third.t_started) == (second.id_, 2)


def test_complete_episodes_batch_mode_returns_whole_episodes_only(make_runner):
    runner = make_runner(counting_config(episode_len=5, batch_mode="complete_episodes"))
    episodes = runner.sample(num_timesteps=7, random_actions=True)
    assert [(e.t_started, len(e), e.is_terminated) for e in episodes] == [(0, 5, True), (0, 5, True)]
    assert runner.get_metrics()["num_env_steps_sampled"] == 10

    runner = make_runner(counting_config(env=VaryingLengthEnv, num_envs=3, batch_mode="complete_episodes"))
    assert [len(e) for e in runner.sample(num_timesteps=4, random_actions=True)] == [2, 3]
    # Env 2's episode (4 steps, 3 of them sampled already) is returned whole once it ends.
    episodes = runner.sample(num_timesteps=1, random_actions=True)
    assert [(e.t_started, len(e)) for e in episodes] == [(0, 2), (0, 4)]


def test_module_actions_come_from_the_modules_outputs_on_each_observation(make_runner):
    runner = make_runner(counting_config(episode_len=6))
    (episode,) = runner.sample(num_timesteps=6, explore=True)
    obs = torch.from_numpy(episode.get_observations()[:-1])
    logits = runner.module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS].numpy()

    stored = episode.get_extra_model_outputs()
    assert sorted(stored) == [Columns.ACTION_DIST_INPUTS, Columns.ACTION_LOGP, Columns.WEIGHTS_SEQ_NO]
    np.testing.assert_allclose(stored[Columns.ACTION_DIST_INPUTS], logits, rtol=1e-5, atol=1e-7)
    actions = episode.get_actions()
    log_probs = torch.log_softmax(torch.from_numpy(logits), -1).numpy()
    np.testing.assert_allclose(stored[Columns.ACTION_LOGP], log_probs[np.arange(6), actions], rtol=1e-5)


def test_explore_false_acts_greedily_and_deterministically(make_runner):
    runner = make_runner(counting_config(episode_len=8))
    (first,) = runner.sample(num_timesteps=8, explore=False)
    (second,) = runner.sample(num_timesteps=8, explore=False)
    logits = first.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)
    assert first.get_actions().tolist() == np.argmax(logits, -1).tolist() == second.get_actions().tolist()
    assert Columns.ACTION_LOGP not in first.extra_model_outputs


def test_config_explore_false_is_the_default_for_sample(make_runner):
    runner = make_runner(counting_config(episode_len=4, explore=False))
    (episode,) = runner.sample(num_timesteps=4)
    assert Columns.ACTION_LOGP not in episode.extra_model_outputs


def test_same_seed_same_weights_and_actions_other_seed_differs(make_runner):
    def sampled(seed, random_actions):
        runner = make_runner(counting_config(episode_len=30, seed=seed))
        return runner.sample(num_timesteps=30, random_actions=random_actions)[0].get_actions().tolist()

    for random_actions in (False, True):
        assert sampled(0, random_actions) == sampled(0, random_actions)
        assert sampled(0, random_actions) != sampled(1, random_actions)
    weights = [make_runner(counting_config(seed=0)).module.get_state() for _ in range(2)]
    for name, value in weights[0].items():
        np.testing.assert_array_equal(value, weights[1][name])


def test_stateful_module_continues_its_state_across_chunks(make_runner):
    config = counting_config(episode_len=10).rl_module(model_config={"use_lstm": True, "lstm_cell_size": 4})
    runner = make_runner(config)
    first = runner.sample(num_timesteps=3)[0]
    second = runner.sample(num_timesteps=3)[0]

    # Replaying the module step by step from the initial state reproduces both chunks' states
    # (acting batches of a recurrent module: OBS [B, 1, ...], STATE_IN [B, ...], as RLlib's).
    state = {k: torch.as_tensor(v)[None] for k, v in runner.module.get_initial_state().items()}
    observations = np.concatenate([first.get_observations()[:-1], second.get_observations()[:-1]])
    for t, obs in enumerate(observations):
        out = runner.module.forward_inference(
            {Columns.OBS: torch.from_numpy(obs[None, None]), Columns.STATE_IN: state}
        )
        state = out[Columns.STATE_OUT]
        chunk, index = (first, t) if t < 3 else (second, t - 3)
        expected = chunk.get_extra_model_outputs(Columns.STATE_OUT, index)
        for name, value in state.items():
            np.testing.assert_allclose(value[0].numpy(), expected[name], rtol=1e-5, atol=1e-6)


class EchoActionEnv(gym.Env):
    """Box(0, 10, (2,)) actions; each observation is the action the env received last (0 at reset)."""

    def __init__(self, config=None):
        self.action_space = gym.spaces.Box(0.0, 10.0, (2,), np.float32)
        self.observation_space = gym.spaces.Box(0.0, 10.0, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.asarray(action, np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("normalize_actions", [True, False])
def test_random_actions_are_stored_in_the_modules_action_space(make_runner, normalize_actions):
    # Policy actions are stored as the module outputs them (in [-1, 1] with normalize_actions), so
    # random ones must be too, or a replay buffer or recorded dataset mixes two action spaces.
    config = PPOConfig().environment(EchoActionEnv, normalize_actions=normalize_actions).debugging(seed=0)
    (episode,) = make_runner(config.env_runners(num_envs_per_env_runner=1)).sample(
        num_timesteps=50, random_actions=True
    )
    stored, received = episode.get_actions(), episode.get_observations(slice(1, 51))
    assert stored.shape == received.shape == (50, 2)
    expected = received / 5.0 - 1.0 if normalize_actions else received
    np.testing.assert_allclose(stored, expected, atol=1e-6)
    assert received.min() < 2.0 and received.max() > 8.0  # uniform over the env's bounds
