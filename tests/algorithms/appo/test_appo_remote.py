"""APPO with remote runners (asynchronous sampling) and remote learners: the result's counters, identical
learners after every update, multi-agent modules, and a runner failing mid-sample."""

import sys

import numpy as np
import pytest
import ray

from flywheel import APPOConfig
from flywheel.testing import CountingEnv, FailingEnv
from flywheel.testing.multi_agent_envs import MultiCartPole

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.ray

FRAGMENT = 20


def remote_config(env=CountingEnv, env_config=None, **learners):
    return (
        APPOConfig()
        .environment(env, env_config={"episode_len": 8, **(env_config or {})}, disable_env_checking=True)
        .env_runners(
            num_env_runners=2,
            num_envs_per_env_runner=2,
            rollout_fragment_length=10,
            num_cpus_per_env_runner=0.5,
            sample_timeout_s=600,  # runners import torch as they start: slow on a loaded machine
        )
        .learners(num_cpus_per_learner=0.5, **learners)
        .training(train_batch_size_per_learner=40)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .reporting(min_time_s_per_iteration=0)
        .fault_tolerance(delay_between_env_runner_restarts_s=0)
        .debugging(seed=0)
    )


def test_results_count_sampled_and_trained_steps_lag_and_queue(ray_session):
    algo = remote_config().build_algo()
    try:
        results = [algo.train() for _ in range(4)]
    finally:
        algo.stop()
    last = results[-1]
    # One update per train() call (min_time_s_per_iteration=0), each on a train batch of two whole
    # fragments (40 env steps), every batch trained on twice (K=2): at least 2 batches sampled.
    sampled, trained = last["num_env_steps_sampled_lifetime"], last["num_env_steps_trained_lifetime"]
    assert sampled % FRAGMENT == 0 and sampled >= 2 * 40 and trained == 4 * 40
    learners = last["learners"]["__all_modules__"]
    assert learners["weights_seq_no"] == 4 and learners["num_env_steps_trained"] == 40
    assert 0 <= learners["weights_lag_mean"] <= learners["weights_lag_max"]
    assert learners["learner_queue_size"] >= 0 and learners["num_env_steps_dropped_lifetime"] >= 0
    assert last["num_env_steps_trained_lifetime_throughput"] > 0
    assert max(r["env_runners"]["num_env_steps_sampled_lifetime_throughput"] for r in results) > 0
    assert last["fault_tolerance"]["num_healthy_env_runners"] == 2
    assert last["fault_tolerance"]["num_env_runner_samples_dropped"] == 0


def test_two_learners_hold_identical_weights_after_every_update(ray_session):
    algo = remote_config(num_learners=2).build_algo()
    try:
        for _ in range(3):
            result = algo.train()
            first, second = algo.learner_group.foreach_learner(
                lambda learner: learner.get_weights(inference_only=False)
            )
            for name, value in first["default_policy"].items():
                np.testing.assert_array_equal(second["default_policy"][name], value, err_msg=name)
            assert any(name.startswith("_old_pi.") for name in first["default_policy"])
    finally:
        algo.stop()
    assert result["learners"]["__all_modules__"]["num_env_steps_trained"] % 80 == 0  # 2 x 40 per update


def test_multi_agent_modules_each_train(ray_session):
    config = remote_config(MultiCartPole, {"num_agents": 2}).multi_agent(
        policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p" + agent_id[-1]
    )
    algo = config.build_algo()
    try:
        result = [algo.train() for _ in range(2)][-1]
    finally:
        algo.stop()
    for module_id in ("p0", "p1"):
        module = result["learners"][module_id]
        assert module["num_module_steps_trained"] > 0 and np.isfinite(module["total_loss"])
    assert result["learners"]["__all_modules__"]["weights_lag_max"] >= 0


def test_a_runner_failing_mid_sample_drops_that_sample_once(ray_session, tmp_path):
    # Worker 1's first sub-env fails in its 26th step, 6 steps into the runner's third sample (10 steps
    # per sub-env each), once: the restarted runner's envs find the marker file and run on.
    fail = {"fail_after": 25, "fail_on_worker_indices": [1], "fail_on_vector_indices": [0],
            "fail_once_marker": str(tmp_path / "failed")}  # fmt: skip
    algo = remote_config(FailingEnv, fail).build_algo()
    try:
        results = [algo.train() for _ in range(6)]
        # On a loaded machine worker 2 can fill those batches before worker 1 (still importing torch)
        # reaches its third sample: train on until the failure is restarted (or give up, and fail below).
        while results[-1]["fault_tolerance"]["num_env_runner_restarts"] < 1 and len(results) < 60:
            results.append(algo.train())
    finally:
        algo.stop()
    last = results[-1]
    assert last["fault_tolerance"]["num_env_runner_failures"] == 1
    assert last["fault_tolerance"]["num_env_runner_restarts"] == 1
    assert last["fault_tolerance"]["num_env_runner_samples_dropped"] == 1
    # Every counted step came in a whole sample: nothing of the failed one is counted.
    assert last["num_env_steps_sampled_lifetime"] % FRAGMENT == 0
    assert last["env_runners"]["num_env_steps_sampled_lifetime"] == last["num_env_steps_sampled_lifetime"]
