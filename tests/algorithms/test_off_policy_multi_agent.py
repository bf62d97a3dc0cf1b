"""Multi-agent DQN and SAC: per-module replay and results, policies_to_train, per-module priorities,
the replay buffer in checkpoints, and counters that are the iteration's totals."""

import numpy as np

from flywheel import Algorithm, Columns, DQNConfig, SACConfig
from flywheel.env import make_multi_agent
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.replay import INDICES, MultiAgentEpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer
from flywheel.testing.multi_agent_envs import MultiCartPole

TwoPendulums = make_multi_agent("Pendulum-v1")


def by_index(agent_id, episode, **kwargs):
    return "p" + str(agent_id)[-1]


def dqn_config(**training):
    settings = {
        "num_steps_sampled_before_learning_starts": 16,
        "training_intensity": 16,  # 16 * 4 sampled / 32 per batch = 2 updates per training step
        "replay_buffer_config": {"capacity": 2000},
        **training,
    }
    return (
        DQNConfig()
        .environment(MultiCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=by_index)
        .training(**settings)
        .rl_module(model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": [16]})
        .reporting(min_sample_timesteps_per_iteration=0)
        .debugging(seed=0)
    )


def learner_weights(algo, module_id):
    return algo.learner_group.get_weights([module_id], inference_only=False)[module_id]


def test_each_module_replays_its_own_agents_steps(build, monkeypatch):
    algo = build(dqn_config())
    replayed = []
    update = algo.learner_group.update
    monkeypatch.setattr(
        algo.learner_group, "update", lambda **kwargs: replayed.append(kwargs["episodes"]) or update(**kwargs)
    )
    for _ in range(6):
        algo.training_step()
    buffer = algo.replay_buffer
    assert isinstance(buffer, MultiAgentEpisodeReplayBuffer) and sorted(buffer) == ["p0", "p1"]
    assert len(buffer["p0"]) == len(buffer["p1"]) == 24  # 6 training steps of 4 env steps, one agent each
    assert len(replayed) == algo.learner_group.weights_seq_no == 6  # 2 updates from the 4th step on
    for episodes in replayed:
        assert [(block.module_id, len(block)) for block in episodes.blocks] == [("p0", 32), ("p1", 32)]
    result = algo.train()
    assert sorted(result["learners"]) == ["__all_modules__", "p0", "p1"]
    assert {"qf_loss", "curr_epsilon", "td_error_mean"} <= set(result["learners"]["p1"])
    for module in result["learners"].values():  # per-row results feed the priorities, not the result
        assert TD_ERROR_KEY not in module and INDICES not in module


def test_only_the_modules_to_train_are_replayed_and_change(build):
    config = (
        dqn_config().multi_agent(policies_to_train={"p0"}).reporting(min_sample_timesteps_per_iteration=40)
    )
    algo = build(config)
    before = {mid: learner_weights(algo, mid) for mid in ("p0", "p1")}
    result = algo.train()
    assert sorted(result["learners"]) == ["__all_modules__", "p0"]
    assert len(algo.replay_buffer["p1"]) > 0  # stored, never replayed
    after = {mid: learner_weights(algo, mid) for mid in ("p0", "p1")}
    changed = [name for name, value in before["p1"].items() if not np.array_equal(after["p1"][name], value)]
    assert changed == ["epsilon"]  # p1 still explores on the schedule; its networks did not train
    assert not np.array_equal(after["p0"]["af.0.weight"], before["p0"]["af.0.weight"])


def test_prioritized_replay_updates_each_modules_priorities(build):
    buffer = {"type": "MultiAgentPrioritizedEpisodeReplayBuffer", "capacity": 2000, "alpha": 1.0}
    algo = build(dqn_config(replay_buffer_config=buffer))
    for _ in range(8):
        algo.training_step()
    for module_id in ("p0", "p1"):
        module_buffer = algo.replay_buffer[module_id]
        assert isinstance(module_buffer, PrioritizedEpisodeReplayBuffer)
        (block,) = module_buffer.sample(200, beta=1.0).blocks
        weights = block.columns[Columns.WEIGHTS]
        assert weights.min() < 1.0 and weights.max() == 1.0  # priorities differ from the new-step default


def test_the_multi_agent_replay_buffer_in_checkpoints(build, tmp_path):
    buffer = {"type": "PrioritizedEpisodeReplayBuffer", "capacity": 2000, "store_in_checkpoints": True}
    algo = build(dqn_config(replay_buffer_config=buffer))
    for _ in range(5):
        algo.training_step()
    path = algo.save_to_path(tmp_path / "ckpt")
    saved = algo.replay_buffer.sample(16, n_step=2, beta=0.4)
    restored = Algorithm.from_checkpoint(path, classes=[by_index, MultiCartPole])
    try:
        assert {mid: len(restored.replay_buffer[mid]) for mid in ("p0", "p1")} == {"p0": 20, "p1": 20}
        again = restored.replay_buffer.sample(16, n_step=2, beta=0.4)
        for a, b in zip(saved.blocks, again.blocks, strict=True):
            assert a.module_id == b.module_id
            for column, values in a.columns.items():
                np.testing.assert_array_equal(b.columns[column], values, err_msg=column)
    finally:
        restored.stop()


def test_counters_are_the_iterations_totals(build):
    algo = build(dqn_config().reporting(min_sample_timesteps_per_iteration=40))
    first = algo.train()  # 10 training steps: 2 updates each from the 4th on
    second = algo.train()  # 10 training steps, 20 updates
    counters = first["learners"]["__all_modules__"], second["learners"]["__all_modules__"]
    assert [c["weights_seq_no"] for c in counters] == [14, 34] and algo.learner_group.weights_seq_no == 34
    assert [c["num_env_steps_trained"] for c in counters] == [14 * 64, 20 * 64]  # 32 per module and update
    assert second["num_env_steps_trained_lifetime"] == 34 * 64


def test_sac_on_two_pendulums(build):
    config = (
        SACConfig()
        .environment(TwoPendulums, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=by_index)
        .training(num_steps_sampled_before_learning_starts=32, train_batch_size_per_learner=16)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .reporting(min_sample_timesteps_per_iteration=40)
        .debugging(seed=0)
    )
    algo = build(config)
    result = algo.train()
    assert algo.learner_group.weights_seq_no == 9  # one update per env step from 32 on
    for module_id in ("p0", "p1"):
        assert {"qf_loss", "policy_loss", "alpha_value"} <= set(result["learners"][module_id])
    counters = result["learners"]["__all_modules__"]
    assert (counters["num_env_steps_trained"], counters["num_target_updates"]) == (9 * 32, 9)
