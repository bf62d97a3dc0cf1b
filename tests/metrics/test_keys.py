"""The key constants of flywheel.metrics.keys name what a trained algorithm's result really holds."""

import gymnasium as gym
import pytest

from flywheel import MultiAgentEnv, PPOConfig
from flywheel.metrics import keys
from flywheel.metrics.keys import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    EPISODE_AGENT_RETURN_MEAN,
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_MODULE_RETURN_MEAN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    EVALUATION_RESULTS,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    SAMPLE_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
    WEIGHTS_SEQ_NO,
)


@pytest.fixture(scope="module")
def ppo_results():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .evaluation(evaluation_interval=1, evaluation_duration=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    results = [algo.train(), algo.train()]
    algo.stop()
    return results


def test_ppo_result_has_the_keys_the_constants_name(ppo_results):
    first, second = ppo_results
    runners = second[ENV_RUNNER_RESULTS]
    for key in (EPISODE_RETURN_MEAN, EPISODE_RETURN_MIN, EPISODE_RETURN_MAX):
        assert runners[key] > 0
    assert runners[EPISODE_LEN_MIN] <= runners[EPISODE_LEN_MEAN] <= runners[EPISODE_LEN_MAX]
    assert runners[EPISODE_RETURN_MEAN] == runners[EPISODE_LEN_MEAN]  # CartPole: reward 1 per step
    assert (runners[NUM_ENV_STEPS_SAMPLED], runners[NUM_ENV_STEPS_SAMPLED_LIFETIME]) == (256, 512)
    assert second[NUM_ENV_STEPS_SAMPLED_LIFETIME] == 512
    assert runners[NUM_EPISODES] > 0
    assert runners[NUM_EPISODES_LIFETIME] == first[ENV_RUNNER_RESULTS][NUM_EPISODES] + runners[NUM_EPISODES]
    assert runners[TIMERS][SAMPLE_TIMER] > 0 and runners[WEIGHTS_SEQ_NO] == 1
    learners = second[LEARNER_RESULTS]
    assert learners[ALL_MODULES][NUM_ENV_STEPS_TRAINED] == 256 and learners[ALL_MODULES][WEIGHTS_SEQ_NO] == 2
    assert learners["default_policy"][NUM_MODULE_STEPS_TRAINED] == 256
    assert second[NUM_ENV_STEPS_TRAINED_LIFETIME] == 512
    assert {ENV_RUNNER_SAMPLING_TIMER, LEARNER_UPDATE_TIMER, SYNCH_WORKER_WEIGHTS_TIMER} <= set(
        second[TIMERS]
    )
    assert EPISODE_RETURN_MEAN in second[EVALUATION_RESULTS][ENV_RUNNER_RESULTS]


class TwoAgents(MultiAgentEnv):
    """Two agents act for 3 steps each turn; each step pays agent "a" 1 and agent "b" 2."""

    def __init__(self, config=None):
        super().__init__()
        self.agents = self.possible_agents = ["a", "b"]
        self.observation_spaces = {a: gym.spaces.Box(-1, 1, (2,)) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {a: self.observation_spaces[a].sample() * 0 for a in self.agents}, {}

    def step(self, actions):
        self.t += 1
        obs = {a: self.observation_spaces[a].sample() * 0 for a in actions}
        done = self.t >= 3
        return obs, {"a": 1.0, "b": 2.0}, {"__all__": done}, {"__all__": False}, {}


def test_multi_agent_result_has_the_agent_and_module_keys():
    config = (
        PPOConfig()
        .environment(TwoAgents)
        .multi_agent(policies={"pa", "pb"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}")
        .training(train_batch_size_per_learner=60, minibatch_size=30, num_epochs=1)
    )
    algo = config.build_algo()
    runners = algo.train()[ENV_RUNNER_RESULTS]
    algo.stop()
    assert runners[EPISODE_AGENT_RETURN_MEAN] == {"a": 3.0, "b": 6.0}
    assert runners[EPISODE_MODULE_RETURN_MEAN] == {"pa": 3.0, "pb": 6.0}
    assert runners[EPISODE_RETURN_MEAN] == 9.0
    assert runners[NUM_AGENT_STEPS_SAMPLED] == 2 * runners[NUM_ENV_STEPS_SAMPLED]
    assert runners[NUM_AGENT_STEPS_SAMPLED_LIFETIME] == runners[NUM_AGENT_STEPS_SAMPLED]
    assert runners[NUM_MODULE_STEPS_SAMPLED] == runners[NUM_MODULE_STEPS_SAMPLED_LIFETIME]
    assert set(runners[NUM_MODULE_STEPS_SAMPLED]) == {"pa", "pb"}


def test_every_constant_is_a_string_and_reexported():
    import flywheel.metrics

    for name in keys.__all__:
        assert isinstance(getattr(keys, name), str) and getattr(flywheel.metrics, name) == getattr(keys, name)
    imported_by_rllib_examples = {
        "ENV_RUNNER_RESULTS",
        "EPISODE_RETURN_MEAN",
        "NUM_ENV_STEPS_SAMPLED_LIFETIME",
        "EVALUATION_RESULTS",
        "LEARNER_RESULTS",
        "TIMERS",
        "ENV_RUNNER_SAMPLING_TIMER",
        "LEARNER_UPDATE_TIMER",
        "SYNCH_WORKER_WEIGHTS_TIMER",
        "NUM_ENV_STEPS_TRAINED",
    }
    assert imported_by_rllib_examples <= set(keys.__all__)
