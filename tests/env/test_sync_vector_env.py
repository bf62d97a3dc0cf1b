"""FastSyncVectorEnv returns exactly what gymnasium's SyncVectorEnv returns, step for step."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.env.make import make_vector_env
from flywheel.env.sync_vector_env import FastSyncVectorEnv


class InfoEnv(gym.Env):
    """Discrete observations (the step count), infos with a number, an array and a nested dict,
    episodes of 2 + vector index steps, truncated on even indices."""

    def __init__(self, index):
        self.index = index
        self.observation_space = gym.spaces.Discrete(100)
        self.action_space = gym.spaces.MultiDiscrete([3, 2])
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return 0, {"reset": True}

    def step(self, action):
        self.t += 1
        done = self.t >= 2 + self.index
        info = {"t": self.t, "action": np.asarray(action), "nested": {"sum": int(np.sum(action))}}
        truncate = self.index % 2 == 0
        return self.t, float(np.sum(action)), done and not truncate, done and truncate, info


class SparseInfoEnv(InfoEnv):
    """InfoEnv whose step infos are empty on odd steps (sub-envs with and without infos mix)."""

    def step(self, action):
        *rest, info = super().step(action)
        return *rest, (info if self.t % 2 == 0 else {})


class DictObsEnv(InfoEnv):
    def __init__(self, index):
        super().__init__(index)
        self.observation_space = gym.spaces.Dict({"t": gym.spaces.Discrete(100)})

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        return {"t": obs}, info

    def step(self, action):
        obs, *rest = super().step(action)
        return {"t": obs}, *rest


def assert_same(a, b):
    if isinstance(a, dict):
        assert set(a) == set(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, tuple) or (isinstance(a, np.ndarray) and a.dtype == object):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        np.testing.assert_array_equal(a, b, strict=True)


@pytest.mark.parametrize(
    ("make", "fast"),
    [
        (lambda i: gym.make("CartPole-v1"), True),
        (lambda i: InfoEnv(i), True),
        (lambda i: SparseInfoEnv(i), True),
        (lambda i: DictObsEnv(i), False),  # gymnasium's own step
    ],
)
def test_steps_match_gymnasiums_sync_vector_env(make, fast, monkeypatch):
    fns = [lambda i=i: make(i) for i in range(3)]
    ours = FastSyncVectorEnv(fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    theirs = gym.vector.SyncVectorEnv(fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    gymnasium_steps = []  # the vector envs whose step ran gymnasium's own code
    gymnasium_step = gym.vector.SyncVectorEnv.step
    monkeypatch.setattr(
        gym.vector.SyncVectorEnv,
        "step",
        lambda self, actions: gymnasium_steps.append(self) or gymnasium_step(self, actions),
    )
    assert_same(ours.reset(seed=3), theirs.reset(seed=3))
    ours.action_space.seed(0)
    ends = 0
    for _ in range(100):
        actions = ours.action_space.sample()
        mine, gyms = ours.step(actions), theirs.step(actions)
        assert_same(mine, gyms)
        ends += int(np.sum(mine[2] | mine[3]))
    assert ends >= 10  # episodes ended, so final_obs / final_info were compared too
    assert gymnasium_steps.count(theirs) == 100 and gymnasium_steps.count(ours) == (0 if fast else 100)
    ours.close()
    theirs.close()


def test_the_returned_observations_are_not_overwritten_by_the_next_step():
    env = FastSyncVectorEnv([lambda: InfoEnv(5)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    env.reset(seed=0)
    first = env.step(np.array([[1, 1]]))[0]
    env.step(np.array([[1, 1]]))
    assert first.tolist() == [1]


def test_sync_runners_get_the_fast_vector_env():
    assert type(make_vector_env("CartPole-v1", num_envs=2)) is FastSyncVectorEnv
    assert (
        type(make_vector_env("CartPole-v1", num_envs=2, vectorize_mode="async")) is gym.vector.AsyncVectorEnv
    )
