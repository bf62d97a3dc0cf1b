"""`restart_failed_sub_environments` on the multi-agent runner: a failing sub-env is rebuilt, its ongoing
episode dropped, the restart counted; the other sub-envs go on untouched. Off, the env's error reaches the caller."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiAgentEnv, MultiAgentEnvRunner, PPOConfig
from flywheel.testing import TurnBasedEnv


class FailsOnSubEnv1:
    """Makes an env's sub-env 1 raise in `reset`/`step` once it has taken `config["fail_after"]` steps in total."""

    def __init__(self, config=None):
        super().__init__(config)
        self.fail_after = config["fail_after"]
        self.fails = getattr(config, "vector_index", 0) == 1
        self.total_steps = 0

    def reset(self, *, seed=None, options=None):
        self._maybe_fail("reset")
        return super().reset(seed=seed, options=options)

    def step(self, action_dict):
        self._maybe_fail("step")
        self.total_steps += 1
        return super().step(action_dict)

    def _maybe_fail(self, method):
        if self.fails and self.total_steps >= self.fail_after:
            raise RuntimeError(f"{type(self).__name__}.{method}() failed after {self.total_steps} steps")


class FailingTurnBasedEnv(FailsOnSubEnv1, TurnBasedEnv):
    """`TurnBasedEnv` (one agent acts per step) with a failing sub-env 1."""


class PairEnv(MultiAgentEnv):
    """Agents "x" and "y" both observe `[t]` and act every step; `"__all__"` terminates at `config["episode_len"]`."""

    def __init__(self, config=None):
        super().__init__()
        self.episode_len = config["episode_len"]
        self.possible_agents = self.agents = ["x", "y"]
        self.observation_spaces = {a: gym.spaces.Box(0.0, 100.0, (1,), np.float32) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}
        self.t = 0

    def _obs(self):
        return {a: np.array([self.t], np.float32) for a in self.agents}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action_dict):
        self.t += 1
        done = {"__all__": self.t >= self.episode_len}
        return self._obs(), {a: 1.0 for a in action_dict}, done, {"__all__": False}, {}


class FailingPairEnv(FailsOnSubEnv1, PairEnv):
    """`PairEnv` (two agents act per step) with a failing sub-env 1."""


def failing_config(
    *, env=FailingTurnBasedEnv, restart=True, fail_after=7, vectorize_mode="sync", **multi_agent
):
    """3 sub-envs with 5-step episodes; sub-env 1 fails at its `fail_after + 1`-th step (each rebuilt
    copy again after `fail_after` steps)."""
    return (
        PPOConfig()
        .environment(env, env_config={"fail_after": fail_after, "episode_len": 5})
        .multi_agent(
            policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared", **multi_agent
        )
        .env_runners(num_envs_per_env_runner=3, gym_env_vectorize_mode=vectorize_mode)
        .fault_tolerance(restart_failed_sub_environments=restart)
        .debugging(seed=0)
    )


@pytest.fixture
def make_runner():
    runners = []

    def make(config):
        runners.append(MultiAgentEnvRunner(config=config))
        return runners[-1]

    yield make
    for runner in runners:
        runner.stop()


def p0_obs(episode):
    return episode.agent_episodes["p0"].get_observations().ravel().tolist()


@pytest.mark.parametrize("vectorize_mode", ["sync", "async"])
def test_failing_sub_env_is_rebuilt_and_only_its_episode_dropped(make_runner, vectorize_mode):
    runner = make_runner(failing_config(vectorize_mode=vectorize_mode))
    # Sub-env 1: episode 1 (steps 1-5), then episode 2 fails at its 3rd step (vector step 8): its 2
    # recorded steps and the failed one are not counted, so 10 vector steps count 27 < 28 and an 11th
    # runs. The fresh copy records vector steps 9-11. Sub-envs 0 and 2: 5 + 5 + 1 steps each.
    episodes = runner.sample(num_timesteps=28, random_actions=True)
    assert [len(e) for e in episodes] == [5, 5, 5, 5, 5, 1, 3, 1]
    assert [e.is_terminated for e in episodes] == [True] * 5 + [False] * 3
    assert [p0_obs(e) for e in episodes[:5]] == [[0.0, 2.0, 4.0, 5.0]] * 5
    assert [p0_obs(e) for e in episodes[5:]] == [[0.0], [0.0, 2.0], [0.0]]
    assert all(e.env_t_started == 0 for e in episodes)
    assert len({e.id_ for e in episodes}) == 8
    metrics = runner.get_metrics()
    assert metrics["num_sub_env_restarts"] == 1
    assert metrics["num_sub_env_restarts_lifetime"] == 1
    assert metrics["num_env_steps_sampled"] == 30 == sum(len(e) for e in episodes)
    assert metrics["num_episodes"] == 5

    # The next sample continues every ongoing episode. The rebuilt copy of sub-env 1 ends its episode
    # at vector step 2 and fails again at step 5 (its 8th step), dropping the 2 steps of its next one.
    episodes = runner.sample(num_timesteps=30, random_actions=True)
    assert [(e.env_t_started, len(e)) for e in episodes[:3]] == [(3, 2), (1, 4), (1, 4)]
    metrics = runner.get_metrics()
    assert metrics["num_sub_env_restarts"] == 1
    assert metrics["num_sub_env_restarts_lifetime"] == 1  # a runner's logger hands lifetime sums over
    assert metrics["num_env_steps_sampled"] == 30 == sum(len(e) for e in episodes)


def test_dropped_agent_steps_are_not_counted(make_runner):
    # Counting agent steps (one action per env step in this turn-based env): again 10 vector steps count
    # 27 < 28; the dropped episode's 2 actions (one still in flight) and the failed one are not counted.
    runner = make_runner(failing_config(count_steps_by="agent_steps"))
    episodes = runner.sample(num_timesteps=28, random_actions=True)
    assert [len(e) for e in episodes] == [5, 5, 5, 5, 5, 1, 3, 1]
    assert sum(e.agent_steps() for e in episodes) == 30 - 3  # the 3 in-flight actions of the cut chunks
    assert runner.get_metrics()["num_sub_env_restarts"] == 1


def test_dropped_agent_steps_count_every_acting_agent(make_runner):
    # Two agents act per env step: 10 vector steps count 6 * 10 - 6 (the dropped episode's 2 steps and
    # the failed one, 2 actions each) = 54 < 56, so an 11th runs.
    runner = make_runner(failing_config(env=FailingPairEnv, count_steps_by="agent_steps"))
    episodes = runner.sample(num_timesteps=56, random_actions=True)
    assert [len(e) for e in episodes] == [5, 5, 5, 5, 5, 1, 3, 1]
    assert [e.agent_steps() for e in episodes] == [10, 10, 10, 10, 10, 2, 6, 2]
    assert runner.get_metrics()["num_sub_env_restarts"] == 1


def test_failed_autoreset_keeps_the_finished_episode_and_counts_the_restart(make_runner):
    runner = make_runner(failing_config(fail_after=5))
    # Sub-env 1's episode ends at step 5; the autoreset then fails and is redone on a fresh copy:
    # the finished episode is complete and returned, only the restart is counted.
    episodes = runner.sample(num_timesteps=18, random_actions=True)
    assert [len(e) for e in episodes] == [5, 5, 5, 1, 1, 1]
    assert p0_obs(episodes[1]) == [0.0, 2.0, 4.0, 5.0] and episodes[1].is_terminated
    metrics = runner.get_metrics()
    assert (metrics["num_sub_env_restarts"], metrics["num_episodes"], metrics["num_env_steps_sampled"]) == (
        1,
        3,
        18,
    )


def test_a_sub_env_that_fails_again_on_its_rebuild_raises(make_runner):
    with pytest.raises(RuntimeError, match=r"^FailingTurnBasedEnv\.reset\(\) failed after 0 steps"):
        make_runner(failing_config(fail_after=0)).sample(num_timesteps=3, random_actions=True)


def test_without_the_setting_the_env_error_reaches_the_caller(make_runner):
    runner = make_runner(failing_config(restart=False))
    with pytest.raises(RuntimeError, match=r"^FailingTurnBasedEnv\.step\(\) failed after 7 steps"):
        runner.sample(num_timesteps=30, random_actions=True)
    assert "num_sub_env_restarts" not in runner.get_metrics()


def test_without_the_setting_sub_envs_are_not_wrapped(make_runner):
    runner = make_runner(failing_config(restart=False))
    assert [type(env).__name__ for env in runner.env.envs] == ["FailingTurnBasedEnv"] * 3
    wrapped = make_runner(failing_config())
    assert [type(env).__name__ for env in wrapped.env.envs] == ["_RestartingEnv"] * 3
    assert wrapped.env.envs[0].possible_agents == ["p0", "p1"]  # everything else reads through
