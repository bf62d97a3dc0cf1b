"""TQC (the algorithm): SAC's off-policy loop with quantile critics, checkpoints, several agents, and
Discrete actions refused at build."""

import numpy as np
import pytest
import torch

from flywheel import Algorithm, Columns, TQCConfig
from flywheel.algorithms.sac import SAC
from flywheel.algorithms.sac.rl_module import QF_PREDS
from flywheel.algorithms.tqc import TQC
from flywheel.env import make_multi_agent
from flywheel.errors import ModuleError


def small(config):
    return (
        config.training(
            num_steps_sampled_before_learning_starts=8,
            train_batch_size_per_learner=8,
            n_quantiles=4,
            n_critics=3,
            top_quantiles_to_drop_per_net=1,
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .reporting(min_sample_timesteps_per_iteration=0)
        .debugging(seed=0)
    )


def test_tqc_trains_on_replay_and_a_checkpoint_restores_it(tmp_path):
    algo = small(TQCConfig().environment("Pendulum-v1")).build_algo()
    try:
        assert isinstance(algo, TQC) and isinstance(algo, SAC)
        for _ in range(12):
            algo.training_step()
        path = algo.save_to_path(tmp_path / "ckpt")
        state = algo.learner_group.get_state()["learner"]
        obs = torch.randn(5, 3)
        inputs = algo.env_runner.module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
        result = algo.train()
    finally:
        algo.stop()
    learner = result["learners"]["default_policy"]
    assert {"qf_loss", "policy_loss", "alpha_loss", "alpha_value", "entropy", "td_error_mean"} <= set(learner)
    assert state["weights_seq_no"] == 5  # an update per training step from env step 8 on
    weights = state["rl_module"]["default_policy"]
    assert {name.split(".")[0] for name in weights} == {
        "pi_encoder",
        "pi",
        "qf_encoders",
        "qfs",
        "target_qf_encoders",
        "target_qfs",
    }
    assert weights["qfs.2.weight"].shape == (4, 8)  # the third critic's 4 quantiles

    restored = Algorithm.from_checkpoint(path)
    try:
        restored_state = restored.learner_group.get_state()["learner"]
        module = restored.env_runner.module
        restored_inputs = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
        assert isinstance(restored, TQC) and restored.config.n_quantiles == 4
    finally:
        restored.stop()
    assert restored_state["log_alphas"] == state["log_alphas"] != {"default_policy": 0.0}
    assert sorted(restored_state["rl_module"]["default_policy"]) == sorted(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(restored_state["rl_module"]["default_policy"][name], value)
    torch.testing.assert_close(restored_inputs, inputs, rtol=0, atol=0)


def test_two_agents_train_two_modules():
    config = small(
        TQCConfig()
        .environment(make_multi_agent("Pendulum-v1"), env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}")
    ).reporting(min_sample_timesteps_per_iteration=40)
    algo = config.build_algo()
    try:
        result = algo.train()
        learner = algo.learner_group.foreach_learner(lambda learner: learner)[0]
        q = learner.module["p1"].compute_q_values(
            {Columns.OBS: torch.zeros(2, 3), Columns.ACTIONS: torch.zeros(2, 1)}
        )
    finally:
        algo.stop()
    for module_id in ("p0", "p1"):
        assert result["learners"][module_id]["qf_loss"] > 0
        assert result["learners"][module_id]["num_module_steps_trained"] > 0
    assert q[QF_PREDS].shape == (2, 3, 4)
    assert sorted(learner.log_alphas) == ["p0", "p1"]


def test_discrete_actions_fail_at_build():
    with pytest.raises(
        ModuleError,
        match=r"TQC's critics read \[observation, action\] for a 1-D Box action space, got Discrete\(2\)",
    ):
        TQCConfig().environment("CartPole-v1").build_algo()
