"""A hand-built counting scenario: after step t the observation is [t], the action t % 2, the reward t."""

import gymnasium as gym
import numpy as np

from flywheel.episodes import SingleAgentEpisode

OBS_SPACE = gym.spaces.Box(0.0, 1000.0, (1,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


def obs(t):
    return np.array([float(t)], np.float32)


def counting_episode(n_steps, *, terminated_at=None, with_extras=True, start=0):
    """An episode stepped from reset obs [start] to obs [start + n_steps]."""
    episode = SingleAgentEpisode(observation_space=OBS_SPACE, action_space=ACT_SPACE)
    episode.add_env_reset(obs(start), infos={"t": start})
    for t in range(start + 1, start + n_steps + 1):
        step_more(episode, t, terminated=t == terminated_at, with_extras=with_extras)
    return episode


def step_more(episode, t, *, terminated=False, with_extras=True):
    extras = {"logp": -0.5 * t, "state_out": {"h": np.full(2, t, np.float32)}} if with_extras else None
    episode.add_env_step(
        obs(t), t % 2, float(t), infos={"t": t}, terminated=terminated, extra_model_outputs=extras
    )


def values(data):
    """Observations/actions/rewards as plain Python numbers, whatever the container."""
    return np.asarray(data).reshape(len(data), -1)[:, 0].tolist() if len(data) else []
