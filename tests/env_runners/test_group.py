"""EnvRunnerGroup: local-only without Ray; remote runners sampling in parallel, syncing weights and
merging connector states exactly."""

import random
import subprocess
import sys

import numpy as np
import pytest
import ray

from flywheel.connectors.env_to_module import MeanStdFilter
from flywheel.env_runners.group import EnvRunnerGroup, _shares
from flywheel.env_runners.single_agent import SingleAgentEnvRunner
from flywheel.errors import ModuleError

from .conftest import counting_config

# Functions and configs defined here go to runner processes by value (they cannot import this file).
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
ray.cloudpickle.register_pickle_by_value(sys.modules[counting_config.__module__])


def filter_config(num_env_runners):
    config = counting_config(
        num_env_runners=num_env_runners,
        num_cpus_per_env_runner=0,
        env_to_module_connector=lambda env, spaces, device: MeanStdFilter(),
    )
    config.freeze()
    return config


def filter_state(runner):
    (state,) = runner.env_to_module.get_state().values()
    return state


def test_local_only_group_samples_in_process_without_importing_ray():
    code = (
        "import sys\n"
        "from flywheel import PPOConfig\n"
        "from flywheel.env_runners.group import EnvRunnerGroup\n"
        "group = EnvRunnerGroup(config=PPOConfig().environment('CartPole-v1'))\n"
        "episodes = group.sample(num_timesteps=10)\n"
        "print(sum(len(e) for e in episodes), len(group.get_metrics_states()), group.num_healthy_env_runners, "
        "'ray' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout == "10 1 1 False\n", out.stderr[-2000:]


def test_shares_round_env_steps_up_and_split_episodes_exactly():
    assert _shares(201, 2, exact=False) == [101, 101]
    assert _shares(7, 3, exact=True) == [3, 2, 2]
    assert _shares(None, 2, exact=True) == [None, None]


@pytest.fixture(scope="module")
def group(ray_session):
    group = EnvRunnerGroup(config=filter_config(2))
    yield group
    group.stop()


@pytest.mark.ray
def test_remote_runners_sample_in_parallel_and_merge_filter_states_exactly(group):
    alone = SingleAgentEnvRunner(config=filter_config(0))
    try:
        alone.sample(num_timesteps=10)
        expected = filter_state(alone)["delta"]
        episodes = group.sample(num_timesteps=20)
        assert sum(len(e) for e in episodes) == 20
        assert len(group.get_metrics_states()) == 2
        # Both remote runners saw what `alone` saw; the merge adds their deltas once.
        states = group.foreach_env_runner(filter_state)
        assert len(states) == 3
        for state in states:
            assert state["shared"]["count"] == 2 * expected["count"]
            np.testing.assert_allclose(state["shared"]["mean"], expected["mean"])
            np.testing.assert_allclose(state["shared"]["var"], expected["var"])
            assert state["delta"]["count"] == 0
        # A second round adds only the new observations.
        alone.sample(num_timesteps=10)
        expected = filter_state(alone)["delta"]
        group.sample(num_timesteps=20)
        assert [s["shared"]["count"] for s in group.foreach_env_runner(filter_state)] == [
            2 * expected["count"]
        ] * 3
    finally:
        alone.stop()


@pytest.mark.ray
def test_remote_runners_have_worker_indices_and_answer_probes(group):
    assert group.foreach_env_runner(lambda runner: (runner.worker_index, runner.num_workers)) == [
        (0, 2),
        (1, 2),
        (2, 2),
    ]
    assert group.foreach_env_runner(lambda runner: runner.worker_index, local_env_runner=False) == [1, 2]
    assert group.probe_health() == 2
    assert group.fault_tolerance_metrics() == {
        "num_healthy_env_runners": 2,
        "num_env_runner_failures": 0,
        "num_env_runner_restarts": 0,
        "num_env_runner_timeouts": 0,
        "num_env_runner_samples_dropped": 0,
    }


@pytest.mark.ray
def test_num_episodes_is_split_exactly_over_runners(group):
    episodes = group.sample(num_episodes=3)
    assert len(episodes) == 3
    assert all(e.is_done for e in episodes)


@pytest.mark.ray
def test_sync_weights_reaches_every_runner_with_its_seq_no(group):
    weights = {
        name: np.full_like(value, 0.25)
        for name, value in group.local_env_runner.module.get_state(inference_only=True).items()
    }
    group.sync_weights({"default_policy": weights}, 7)
    seen = group.foreach_env_runner(
        lambda runner: (
            runner.weights_seq_no,
            all(np.all(v == 0.25) for v in runner.get_state()["rl_module"].values()),
        )
    )
    assert seen == [(7, True)] * 3
    group.sync_weights({"default_policy": weights}, 6)  # older: ignored
    assert group.foreach_env_runner(lambda runner: runner.weights_seq_no) == [7, 7, 7]


@pytest.mark.ray
def test_a_failed_weight_sync_is_raised_with_the_next_sample(ray_session):
    config = counting_config(num_env_runners=1, num_cpus_per_env_runner=0).fault_tolerance(
        restart_failed_env_runners=False
    )
    config.freeze()
    group = EnvRunnerGroup(config=config)
    try:
        remote_only = {"default_policy": {"bogus": np.zeros(1)}}
        group.local_env_runner.set_state = lambda state: None  # only the remote runner sees the weights
        group.sync_weights(remote_only, 1)  # returns without waiting for the runner
        with pytest.raises(ModuleError, match=r"got weights this module does not have: \['bogus'\]"):
            group.sample(num_timesteps=4)
        assert group.fault_tolerance_metrics()["num_env_runner_failures"] == 1
    finally:
        group.stop()


@pytest.mark.ray
def test_remote_runner_processes_are_seeded_from_seed_and_worker_index(ray_session):
    config = counting_config(num_env_runners=2, num_cpus_per_env_runner=0, seed=7)
    config.freeze()
    group = EnvRunnerGroup(config=config)
    try:
        draws = group.foreach_env_runner(
            lambda runner: (random.random(), float(np.random.random())), local_env_runner=False
        )
    finally:
        group.stop()
    assert draws == [
        (random.Random(7 + w).random(), float(np.random.RandomState(7 + w).random_sample())) for w in (1, 2)
    ]


def test_rllibs_sync_weights_call_reads_weights_and_seq_no_from_the_learner_group():
    config = filter_config(0)
    group = EnvRunnerGroup(config=config)
    learners = config.build_learner_group(spaces=group.local_env_runner.get_spaces())
    learners.set_weights(
        {
            mid: {name: np.full_like(value, 0.5) for name, value in weights.items()}
            for mid, weights in learners.get_weights().items()
        }
    )
    learners.foreach_learner(lambda learner: learner.set_state({"weights_seq_no": 3}))
    assert group.num_remote_workers() == group.num_remote_env_runners() == 0
    group.sync_weights(from_worker_or_learner_group=learners, inference_only=True, timeout_seconds=0.0)
    runner = group.local_env_runner
    assert runner.weights_seq_no == 3
    assert all(np.all(value == 0.5) for value in runner.module.get_state().values())
    group.sync_weights()  # RLlib's no-argument form: the local runner's weights to the (no) remote ones
    assert runner.weights_seq_no == 3
    group.stop()
    learners.shutdown()
