"""APPO and IMPALA without remote runners (synchronous, as RLlib runs them): counters, weights lag, the
learner's target network and KL coefficient, reproducibility, checkpoints, failed iterations, LSTMs."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Algorithm, APPOConfig, IMPALAConfig, MultiAgentEnv
from flywheel.algorithms.appo import APPOTorchLearner, DefaultAPPOTorchRLModule
from flywheel.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS
from flywheel.testing import CountingEnv

SMALL = {"fcnet_hiddens": [8]}


def sync_config(cls=APPOConfig, **training):
    return (
        cls()
        .environment(CountingEnv, env_config={"episode_len": 7})
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=10)
        .training(train_batch_size_per_learner=40, **training)
        .rl_module(model_config=SMALL)
        .reporting(min_time_s_per_iteration=0)
        .debugging(seed=0)
    )


def deterministic(result):
    return {
        key: deterministic(value) if isinstance(value, dict) else value
        for key, value in result.items()
        if key not in ("timers", "time_this_iter_s", "time_total_s") and not key.endswith("_throughput")
    }


def test_appo_trains_each_sampled_batch_k_times_and_reports_its_lag():
    algo = sync_config(circular_buffer_iterations_per_batch=3).build_algo()
    try:
        algo.train()
        second = algo.train()
    finally:
        algo.stop()
    assert second["num_env_steps_sampled_lifetime"] == 80
    assert second["num_env_steps_trained_lifetime"] == 3 * 80
    learners = second["learners"]["__all_modules__"]
    # One sample, then 3 updates on it: the weights that sampled it are 0, 1 and 2 updates behind.
    assert (learners["weights_lag_mean"], learners["weights_lag_max"]) == (1.0, 2)
    assert learners["weights_seq_no"] == 6 and learners["num_env_steps_trained"] == 120
    # The batch stays in the buffer for its first two updates: 1, 1, 0 batches waiting after each.
    assert learners["learner_queue_size"] == pytest.approx(2 / 3)
    assert learners["num_env_steps_dropped_lifetime"] == 0
    assert (
        second["env_runners"]["weights_seq_no"] == 3
    )  # the runner sampled with the first iteration's last weights
    module = second["learners"]["default_policy"]
    assert {"policy_loss", "vf_loss", "entropy", "mean_IS", "var_IS", "curr_kl_coeff", "total_loss"} <= set(
        module
    )
    assert {"num_env_steps_trained_lifetime_throughput", "num_env_steps_sampled_lifetime"} <= set(second)


def test_impala_trains_each_batch_once_on_fresh_weights():
    algo = sync_config(IMPALAConfig).build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["num_env_steps_sampled_lifetime"] == result["num_env_steps_trained_lifetime"] == 40
    learners = result["learners"]["__all_modules__"]
    assert (learners["weights_lag_mean"], learners["weights_lag_max"]) == (0.0, 0)
    assert set(result["learners"]["default_policy"]) >= {
        "policy_loss",
        "vf_loss",
        "entropy",
        "curr_entropy_coeff",
    }


def test_first_update_is_on_policy_for_the_target_network():
    # Runner, learner and target policy hold the same weights before the first update: every
    # importance ratio is 1, so the surrogate's mean IS is 1 and its variance 0; the KL is 0, so the
    # adaptive KL coefficient halves.
    algo = sync_config(use_kl_loss=True, kl_coeff=0.4, circular_buffer_iterations_per_batch=1).build_algo()
    try:
        module = algo.train()["learners"]["default_policy"]
    finally:
        algo.stop()
    assert module["mean_IS"] == pytest.approx(1.0, abs=1e-5) and module["var_IS"] == pytest.approx(
        0.0, abs=1e-9
    )
    assert module["mean_kl_loss"] == pytest.approx(0.0, abs=1e-7)
    assert module["curr_kl_coeff"] == pytest.approx(0.2)


def test_kl_coefficient_adapts_to_the_last_minibatchs_kl_as_rllibs(monkeypatch):
    # RLlib's APPO logs the KL with window=1 and adapts the coefficient to it after each update.
    kls, adapted_to = [], []
    log = APPOTorchLearner.log_minibatch_value
    adapt = APPOTorchLearner.adapt_kl_coeffs

    def log_and_keep(self, key, value):
        if key == ("default_policy", "mean_kl_loss"):
            kls.append(float(value))
        log(self, key, value)

    def adapt_and_keep(self, kls_now=None):
        adapted_to.append(dict(kls_now or {}))
        adapt(self, kls_now)

    monkeypatch.setattr(APPOTorchLearner, "log_minibatch_value", log_and_keep)
    monkeypatch.setattr(APPOTorchLearner, "adapt_kl_coeffs", adapt_and_keep)
    algo = sync_config(
        use_kl_loss=True, circular_buffer_iterations_per_batch=3, minibatch_size=20, lr=0.05
    ).build_algo()
    try:
        algo.train()
        algo.train()
    finally:
        algo.stop()
    per_update = len(kls) // len(adapted_to)
    assert len(adapted_to) >= 2 and per_update >= 2 and len(kls) == per_update * len(adapted_to)
    last = kls[per_update - 1 :: per_update]
    assert [update["default_policy"] for update in adapted_to] == pytest.approx(last)
    means = [sum(kls[i : i + per_update]) / per_update for i in range(0, len(kls), per_update)]
    assert means != pytest.approx(last)  # the mean over minibatches would be another input


def test_target_network_follows_every_period_of_trained_env_steps():
    # Period: freq 1 x N 1 x K 1 x 40 = 40 trained env steps: updates 2, 3, ... each move the target.
    config = sync_config(
        target_network_update_freq=1, circular_buffer_num_batches=1, circular_buffer_iterations_per_batch=1
    )
    algo = config.build_algo()
    try:
        first = algo.train()["learners"]["__all_modules__"]
        module = algo.learner_group.foreach_learner(lambda learner: learner.module["default_policy"])[0]
        main = [p.detach().clone() for p in module.pi.parameters()]
        target = [p.detach().clone() for p in dict(module.get_target_network_pairs())[module.pi].parameters()]
        assert any(not torch.equal(a, b) for a, b in zip(main, target))  # one update: target not moved yet
        second = algo.train()["learners"]["__all_modules__"]
        third = algo.train()["learners"]["__all_modules__"]
        state = algo.learner_group.get_state()["learner"]
    finally:
        algo.stop()
    assert "num_target_updates" not in first
    assert (second["num_target_updates"], third["num_target_updates"]) == (1, 2)
    assert state["last_target_update_ts"] == 80


def test_seeded_runs_repeat_exactly():
    def run():
        algo = sync_config().build_algo()
        try:
            results = [deterministic(algo.train()) for _ in range(2)]
            return results, algo.learner_group.get_weights(inference_only=False)["default_policy"]
        finally:
            algo.stop()

    (first, first_weights), (second, second_weights) = run(), run()
    assert first == second
    for name, value in first_weights.items():
        np.testing.assert_array_equal(second_weights[name], value, err_msg=name)


def test_checkpoint_keeps_target_networks_and_kl_coefficients(tmp_path):
    algo = sync_config(use_kl_loss=True).build_algo()
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
        saved = algo.learner_group.get_state()["learner"]
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path, classes=[CountingEnv])
    try:
        state = restored.learner_group.get_state()["learner"]
        assert state["curr_kl_coeffs"] == saved["curr_kl_coeffs"] and state["weights_seq_no"] == 2
        for name, value in saved["rl_module"]["default_policy"].items():
            np.testing.assert_array_equal(state["rl_module"]["default_policy"][name], value, err_msg=name)
        assert any(name.startswith("_old_pi.") for name in state["rl_module"]["default_policy"])
        assert restored.train()["training_iteration"] == 2
    finally:
        restored.stop()


class FailsInThirdUpdate(APPOTorchLearner):
    calls = 0

    def compute_loss_for_module(self, **kwargs):
        self.calls += 1
        if self.calls == 3:
            raise ValueError("loss failed")
        return super().compute_loss_for_module(**kwargs)


def test_a_failed_iteration_returns_the_buffer_to_where_it_was():
    algo = sync_config().learners(learner_class=FailsInThirdUpdate).build_algo()
    try:
        algo.train()
        with pytest.raises(ValueError, match="^loss failed$"):
            algo.train()
        assert algo.iteration == 1 and len(algo.learner_queue) == 0
        assert algo.learner_group.weights_seq_no == 2
        result = algo.train()
    finally:
        algo.stop()
    assert result["num_env_steps_sampled_lifetime"] == 80 and result["training_iteration"] == 2


def test_default_module_keeps_target_copies_out_of_the_runners():
    algo = sync_config().build_algo()
    try:
        runner_weights = algo.env_runner.module.get_state()
        learner_module = algo.learner_group.foreach_learner(lambda learner: learner.module["default_policy"])[
            0
        ]
    finally:
        algo.stop()
    assert isinstance(learner_module, DefaultAPPOTorchRLModule)
    assert not any(name.startswith("_old_") for name in runner_weights)
    out = learner_module.forward_target({"obs": torch.zeros(3, 1)})
    assert out[TARGET_NETWORK_ACTION_DIST_INPUTS].shape == (3, 2)
    targets = dict(learner_module.get_target_network_pairs())
    assert all(not p.requires_grad for p in targets[learner_module.encoder].parameters())


def test_recurrent_default_module_trains_on_bootstrapped_sequences():
    config = sync_config().rl_module(model_config={"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 5})
    algo = config.build_algo()
    try:
        module = algo.train()["learners"]["default_policy"]
    finally:
        algo.stop()
    assert all(math.isfinite(module[key]) for key in ("policy_loss", "vf_loss", "total_loss"))
    assert module["mean_IS"] == pytest.approx(1.0, abs=1e-4)  # same weights: the LSTM state lines up


class TwoArms(MultiAgentEnv):
    """Agent "a0" earns 1 for action 0, "a1" for action 1, in each of 10 steps."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = ["a0", "a1"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: gym.spaces.Box(-1.0, 1.0, (2,), np.float32) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {a: np.zeros(2, np.float32) for a in self.agents}, {}

    def step(self, action_dict):
        self.t += 1
        obs = {a: np.full(2, self.t / 10, np.float32) for a in action_dict}
        rewards = {a: float(action == int(a[-1])) for a, action in action_dict.items()}
        return obs, rewards, {"__all__": self.t >= 10}, {"__all__": False}, {}


def test_multi_agent_modules_each_learn_their_own_arm():
    config = (
        APPOConfig()
        .environment(TwoArms)
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p" + agent_id[-1]
        )
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
        .training(lr=3e-3, train_batch_size_per_learner=200, entropy_coeff=0.0)
        .rl_module(model_config=SMALL)
        .reporting(min_time_s_per_iteration=0)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        for _ in range(60):
            returns = algo.train()["env_runners"]["module_episode_returns_mean"]
            if min(returns.values()) >= 9.0:
                break
    finally:
        algo.stop()
    assert returns["p0"] >= 9.0 and returns["p1"] >= 9.0, returns  # random actions: 5
