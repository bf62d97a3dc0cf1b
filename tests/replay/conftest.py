"""Shared helpers for replay tests: chunks whose observations tell where they come from."""

import gymnasium as gym
import numpy as np

from flywheel import Columns
from flywheel.episodes import SingleAgentEpisode

OBS_SPACE = gym.spaces.Box(-1e6, 1e6, (1,), np.float32)
ACT_SPACE = gym.spaces.Discrete(1000)


def chunk(rewards, *, base=0, t_started=0, terminated=False, truncated=False, id_=None, extras=None):
    """A numpy'd chunk: the observation at episode time t is [base + t], the action at t is t."""
    n = len(rewards)
    return SingleAgentEpisode(
        id_,
        observations=[np.array([base + t], np.float32) for t in range(t_started, t_started + n + 1)],
        observation_space=OBS_SPACE,
        actions=list(range(t_started, t_started + n)),
        action_space=ACT_SPACE,
        rewards=list(rewards),
        terminated=terminated,
        truncated=truncated,
        extra_model_outputs=extras,
        t_started=t_started,
        len_lookback_buffer=0,
    ).to_numpy()


def runner_chunks(rewards, cut_after, *, base=0, terminated=False, lookback=2):
    """Chunks as an EnvRunner hands them out: recorded step by step, cut (with lookback) after each of ``cut_after``."""
    episode = SingleAgentEpisode(observation_space=OBS_SPACE, action_space=ACT_SPACE)
    episode.add_env_reset(np.array([base], np.float32))
    chunks = []
    for t, reward in enumerate(rewards, start=1):
        done = terminated and t == len(rewards)
        episode.add_env_step(np.array([base + t], np.float32), t - 1, reward, terminated=done)
        if t in cut_after:
            successor = episode.cut(len_lookback_buffer=lookback)
            chunks.append(episode.to_numpy())
            episode = successor
    chunks.append(episode.to_numpy())
    return chunks


def transitions(episodes):
    """Sampled transitions, read from the one-step episodes, keyed by their start observation:
    (reward, next obs, n_step, terminated, truncated)."""
    out = {}
    for episode in episodes:
        assert len(episode) == 1
        obs, next_obs = episode.get_observations()[:, 0].tolist()
        out[obs] = (
            round(float(episode.get_rewards(0)), 6),
            next_obs,
            int(episode.get_extra_model_outputs(Columns.N_STEP, 0)),
            episode.is_terminated,
            episode.is_truncated,
        )
    return out


def columns(episodes):
    """The columns of sampled transitions (one module's: the only block)."""
    (block,) = episodes.blocks
    return block.columns
