"""RLlib's `synchronous_parallel_sample`: a PPO `training_step` written as RLlib 2.60 writes its own
gives the same run as flywheel's PPO (counters, losses, weights)."""

import numpy as np

from flywheel import PPO, PPOConfig
from flywheel.env_runners.rollout_ops import synchronous_parallel_sample
from flywheel.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)


class PPOAsRLlibWritesIt(PPO):
    def training_step(self):
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, env_runner_results = synchronous_parallel_sample(
                worker_set=self.env_runner_group,
                max_env_steps=self.config.total_train_batch_size,
                sample_timeout_s=self.config.sample_timeout_s,
                _uses_new_env_runners=True,
                _return_metrics=True,
            )
        self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.learner_group.update(
                episodes=episodes,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                        (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)
                    ),
                },
                num_epochs=self.config.num_epochs,
                minibatch_size=self.config.minibatch_size,
                shuffle_batch_per_epoch=self.config.shuffle_batch_per_epoch,
            )
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group, inference_only=True
            )


def run(algo_class):
    config = (
        PPOConfig(algo_class=algo_class)
        .environment("CartPole-v1")
        .training(train_batch_size=200, minibatch_size=50, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .reporting(min_time_s_per_iteration=0)
        .debugging(seed=1)
    )
    algo = config.build_algo()
    try:
        return [algo.train() for _ in range(2)], algo.learner_group.get_weights()["default_policy"]
    finally:
        algo.stop()


def test_rllibs_ppo_training_step_runs_as_written_and_gives_flywheels_run():
    ours, our_weights = run(PPO)
    theirs, their_weights = run(PPOAsRLlibWritesIt)
    for mine, other in zip(ours, theirs, strict=True):
        for key in ("num_env_steps_sampled_lifetime", "num_env_steps_trained_lifetime"):
            assert mine[key] == other[key]
        assert mine["env_runners"]["num_episodes_lifetime"] == other["env_runners"]["num_episodes_lifetime"]
        assert (
            mine["learners"]["default_policy"]["total_loss"]
            == other["learners"]["default_policy"]["total_loss"]
        )
        assert (
            mine["learners"]["__all_modules__"]["weights_seq_no"]
            == other["learners"]["__all_modules__"]["weights_seq_no"]
        )
    assert theirs[-1]["num_env_steps_sampled_lifetime"] == 400
    assert theirs[-1]["num_env_steps_trained_lifetime"] == 800  # 2 epochs
    for name, value in our_weights.items():
        np.testing.assert_array_equal(value, their_weights[name], err_msg=name)


def test_without_a_step_count_each_runner_samples_one_fragment_and_concat_false_nests():
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(rollout_fragment_length=30)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
        .build_algo()
    )
    try:
        episodes = synchronous_parallel_sample(worker_set=algo.env_runner_group)
        (nested,) = synchronous_parallel_sample(
            worker_set=algo.env_runner_group, concat=False, max_env_steps=10
        )
    finally:
        algo.stop()
    assert sum(map(len, episodes)) == 30
    assert sum(map(len, nested)) >= 10
