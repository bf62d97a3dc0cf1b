"""SingleAgentEnvRunner with its connector pipelines: order, space changes, rewritten observations,
Box actions, and a NEXT_STEP-autoreset vector env."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, ConnectorV2, PPOConfig, RLModuleSpec, TorchRLModule
from flywheel.connectors.env_to_module import FlattenObservations, MeanStdFilter
from flywheel.testing import CountingContinuousEnv, CountingEnv

from .conftest import counting_config, obs_of


class AddTen(ConnectorV2):
    """Rewrites each episode's newest observation to obs + 10 (like a normalizing filter would)."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in episodes:
            episode.set_observations(new_data=episode.get_observations(-1) + 10.0, at_indices=-1)
        return batch


class AppendSquare(ConnectorV2):
    """Stores obs as [t, t**2] and declares the wider observation space."""

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        return gym.spaces.Box(0.0, np.inf, (2,), np.float32)

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in episodes:
            t = episode.get_observations(-1)[0]
            episode.set_observations(new_data=np.array([t, t * t], np.float32), at_indices=-1)
        return batch


class SeenModule(TorchRLModule):
    """Uniform logits; remembers every observation batch it was given."""

    def setup(self):
        self.seen = []
        self.scale = torch.nn.Parameter(torch.zeros(()))

    def _forward(self, batch, **kwargs):
        self.seen.append(batch[Columns.OBS].ravel().tolist())
        return {Columns.ACTION_DIST_INPUTS: torch.zeros(len(batch[Columns.OBS]), 2) * self.scale}


def test_pipelines_hold_custom_pieces_in_order(make_runner):
    class Tag(ConnectorV2):
        def __call__(self, *, batch, **kwargs):
            return batch

    config = counting_config(
        env_to_module_connector=lambda env, spaces, device: [AddTen(), AppendSquare()],
        module_to_env_connector=lambda env, spaces: Tag(),
    )
    runner = make_runner(config)
    assert [p.name for p in runner.env_to_module.connectors] == [
        "AddTen", "AppendSquare", "AddObservationsFromEpisodesToBatch", "AddStatesFromEpisodesToBatch",
        "BatchIndividualItems", "AddTimeDimToBatchAndZeroPad", "NumpyToTensor",
    ]  # fmt: skip
    assert [p.name for p in runner.module_to_env.connectors] == [
        "GetActions",
        "TensorToNumpy",
        "RemoveSingleTsTimeRankFromBatch",
        "NormalizeAndClipActions",
        "Tag",
    ]
    # The module is built for the pipeline's output space, not the env's.
    assert runner.module.observation_space == gym.spaces.Box(0.0, np.inf, (2,), np.float32)
    (episode,) = runner.sample(num_timesteps=2)
    assert episode.get_observations().tolist() == [[10.0, 100.0], [11.0, 121.0], [12.0, 144.0]]
    assert episode.get_observations().dtype == np.float32


def test_rewritten_observations_reach_the_module_and_the_episodes(make_runner):
    config = counting_config(
        episode_len=3, env_to_module_connector=lambda env, spaces, device: AddTen()
    ).rl_module(rl_module_spec=RLModuleSpec(module_class=SeenModule))
    runner = make_runner(config)
    done, cut = runner.sample(num_timesteps=4)

    assert obs_of(done) == [10.0, 11.0, 12.0, 13.0]  # the final observation processed too
    assert obs_of(cut) == [10.0, 11.0]  # the chunk's last observation processed before the cut
    assert runner.module.seen == [[10.0], [11.0], [12.0], [10.0]]
    (continued,) = runner.sample(num_timesteps=1)
    # The cut-off observation is not processed a second time.
    assert (continued.t_started, obs_of(continued)) == (1, [11.0, 12.0])
    assert runner.module.seen[-1] == [11.0]


def test_callbacks_see_processed_observations(make_runner):
    seen = []
    config = counting_config(episode_len=2, env_to_module_connector=lambda env, spaces, device: AddTen())
    config.callbacks(
        on_episode_start=lambda episode, **kw: seen.append(("start", episode.get_observations(-1)[0])),
        on_episode_end=lambda episode, **kw: seen.append(("end", episode.get_observations(-1)[0])),
    )
    make_runner(config).sample(num_timesteps=2, random_actions=True)
    assert seen == [("start", 10.0), ("end", 12.0), ("start", 10.0)]


def test_dict_observations_flattened_by_a_piece_are_stored_flat(make_runner):
    class DictEnv(CountingEnv):
        def __init__(self, config=None):
            super().__init__(config)
            self.observation_space = gym.spaces.Dict(
                {"t": gym.spaces.Discrete(8), "box": gym.spaces.Box(0.0, 8.0, (1,), np.float32)}
            )

        def reset(self, *, seed=None, options=None):
            obs, info = super().reset(seed=seed)
            return {"t": int(obs[0]), "box": obs}, info

        def step(self, action):
            obs, *rest = super().step(action)
            return {"t": int(obs[0]), "box": obs}, *rest

    config = counting_config(env=DictEnv, episode_len=2)
    config.env_runners(env_to_module_connector=lambda env, spaces, device: FlattenObservations())
    runner = make_runner(config)
    assert runner.module.observation_space.shape == (9,)
    done, _ = runner.sample(num_timesteps=3)
    obs = done.get_observations()
    assert obs.shape == (3, 9) and obs.dtype == np.float32
    # gymnasium sorts Dict keys: "box" (1 value), then "t" (one-hot of 8).
    assert obs[:, 0].tolist() == [0.0, 1.0, 2.0] and obs[:, 1:].argmax(1).tolist() == [0, 1, 2]


def test_float_observations_written_over_integer_ones_keep_their_dtype(make_runner):
    class ByteEnv(CountingEnv):
        def __init__(self, config=None):
            super().__init__(config)
            self.observation_space = gym.spaces.Box(0, 255, (1,), np.uint8)

        def reset(self, *, seed=None, options=None):
            obs, info = super().reset(seed=seed)
            return obs.astype(np.uint8), info

        def step(self, action):
            obs, *rest = super().step(action)
            return obs.astype(np.uint8), *rest

    config = counting_config(env=ByteEnv, episode_len=3)
    config.env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())
    (episode,) = make_runner(config).sample(num_timesteps=3)
    obs = episode.get_observations()
    assert obs.dtype == np.float32
    # Each observation normalized with the running stats including itself: (t - mean(0..t)) / std(0..t).
    expected = [0.0] + [(t - np.mean(range(t + 1))) / np.std(range(t + 1)) for t in range(1, 4)]
    np.testing.assert_allclose(obs.ravel(), expected, rtol=1e-4, atol=1e-5)


class ActionEchoEnv(CountingContinuousEnv):
    """Box(0, 10) actions; the info of every step holds the action the env received."""

    def __init__(self, config=None):
        super().__init__(config)
        self.action_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"received": np.array(action, np.float32)}


@pytest.mark.parametrize(
    ("normalize", "clip", "to_env"),
    [
        (True, False, lambda a: np.clip(5.0 + 5.0 * a, 0.0, 10.0)),
        (False, True, lambda a: np.clip(a, 0.0, 10.0)),
        (False, False, lambda a: a),
    ],
)
def test_box_actions_are_stored_as_sampled_and_sent_normalized_or_clipped(
    make_runner, normalize, clip, to_env
):
    config = counting_config(env=ActionEchoEnv, episode_len=40).environment(
        normalize_actions=normalize, clip_actions=clip
    )
    (episode,) = make_runner(config).sample(num_timesteps=40)
    actions = episode.get_actions()
    assert actions.shape == (40, 1) and actions.dtype == np.float32
    assert (actions < -1.0).any() and (actions > 1.0).any() and (actions < 0.0).any()  # a meaningful test
    received = np.array([info["received"] for info in episode.get_infos()[1:]])
    np.testing.assert_allclose(received, to_env(actions), rtol=1e-6)
    assert Columns.ACTIONS_FOR_ENV not in episode.extra_model_outputs


def test_next_step_autoreset_vector_env_records_no_reset_steps(make_runner):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, gym_env_vectorize_mode="vector_entry_point")
        .debugging(seed=0)
    )
    runner = make_runner(config)
    assert runner.env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    episodes = runner.sample(num_timesteps=300, random_actions=True)
    episodes += runner.sample(num_timesteps=300, random_actions=True)
    finished = [e for e in episodes if e.is_done]

    assert len(finished) >= 10
    for episode in episodes:
        episode.validate()
        assert episode.get_rewards().tolist() == [1.0] * len(episode)  # no zero-reward reset steps
        if episode.t_started == 0:  # a reset observation, not the previous episode's final one
            assert np.abs(episode.get_observations(0)).max() <= 0.05
    metrics = runner.get_metrics()
    assert metrics["num_env_steps_sampled"] == sum(len(e) for e in episodes)
    assert 600 <= metrics["num_env_steps_sampled"] < 608
    window = [e.t for e in finished]
    assert metrics["episode_len_mean"] == pytest.approx(np.mean(window))
    assert metrics["episode_return_mean"] == pytest.approx(np.mean(window))
    assert metrics["num_episodes"] == len(finished)
