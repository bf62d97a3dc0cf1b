"""DQN (the algorithm): warm-up, replay ratio, priorities fed back, weight and epsilon sync, results,
evaluation, checkpoints, and Box actions refused at build."""

import numpy as np
import pytest
import torch

from flywheel import Algorithm, Columns, ConnectorV2, DQNConfig
from flywheel.algorithms.dqn import DQN, DQNTorchLearner
from flywheel.errors import LearnerError, ModuleError
from flywheel.inference import load_policy
from flywheel.metrics.keys import TD_ERROR_KEY
from flywheel.replay import INDICES, PrioritizedEpisodeReplayBuffer


def small_config(**training):
    settings = {
        "num_steps_sampled_before_learning_starts": 8,
        "training_intensity": 16,  # 16 * 4 sampled / 32 per batch = 2 updates per training step
        "epsilon": [[0, 1.0], [100, 0.0]],
        "replay_buffer_config": {"capacity": 1000},
        **training,
    }
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .training(**settings)
        .rl_module(model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": [16]})
        .reporting(min_sample_timesteps_per_iteration=0)
        .debugging(seed=0)
    )


@pytest.fixture
def algo():
    algo = small_config().build_algo()
    yield algo
    algo.stop()


def test_warm_up_then_two_updates_per_training_step(algo):
    assert isinstance(algo, DQN) and algo.config.sample_and_train_rounds() == (1, 2)
    algo.training_step()  # 4 env steps: still filling the buffer
    assert len(algo.replay_buffer) == 4 and algo.learner_group.weights_seq_no == 0
    trained = ("learners", "__all_modules__", "num_env_steps_trained_lifetime")
    assert trained not in algo.metrics
    algo.training_step()  # 8 env steps: learning starts
    assert len(algo.replay_buffer) == 8 and algo.learner_group.weights_seq_no == 2
    assert algo.metrics.peek(trained) == 64
    assert algo.env_runner.weights_seq_no == 2  # synced after the updates
    learner_module = algo.learner_group.foreach_learner(lambda learner: learner.module["default_policy"])[0]
    assert float(learner_module.epsilon) == pytest.approx(0.92)  # schedule at 8 sampled env steps
    assert float(algo.get_module().epsilon) == pytest.approx(0.92)  # ... and on the runner


def test_train_returns_dqn_results(algo):
    result = algo.train()
    assert result["num_env_steps_sampled_lifetime"] == 4
    result = algo.train()
    learner = result["learners"]["default_policy"]
    assert {"qf_loss", "qf_mean", "td_error_mean", "curr_epsilon", "total_loss"} <= set(learner)
    assert result["replay_buffer"]["num_env_steps_stored"] == 8
    assert {
        "replay_buffer_add_data_timer",
        "replay_buffer_sampling_timer",
        "learner_update_timer",
        "synch_weights",
    } <= set(result["timers"])


def test_sample_rounds_when_the_intensity_is_below_the_native_ratio():
    algo = small_config(training_intensity=2, num_steps_sampled_before_learning_starts=0).build_algo()
    try:
        algo.training_step()  # 4 sample() calls of 4 steps, then one update of 32
        assert (len(algo.replay_buffer), algo.learner_group.weights_seq_no) == (16, 1)
    finally:
        algo.stop()


def test_prioritized_replay_gets_the_td_errors_back(monkeypatch):
    config = small_config(
        replay_buffer_config={
            "type": "PrioritizedEpisodeReplayBuffer",
            "capacity": 1000,
            "alpha": 1.0,
            "beta": 0.4,
        }
    )
    algo = config.build_algo()
    calls, updates = [], []
    buffer = algo.replay_buffer
    assert isinstance(buffer, PrioritizedEpisodeReplayBuffer) and buffer.alpha == 1.0
    set_priorities, update = buffer.update_priorities, algo.learner_group.update

    def spy_priorities(priorities, indices):
        calls.append((priorities.copy(), indices.copy()))
        set_priorities(priorities, indices)

    def spy_update(**kwargs):
        updates.append(kwargs["episodes"])
        results = update(**kwargs)
        (one_learner,) = results  # RLlib's shape: a list with each learner's results
        updates.append(one_learner["default_policy"])
        return results

    monkeypatch.setattr(buffer, "update_priorities", spy_priorities)
    monkeypatch.setattr(algo.learner_group, "update", spy_update)
    try:
        algo.training_step()
        algo.training_step()
    finally:
        algo.stop()
    assert len(calls) == 2 and len(updates) == 4
    for (priorities, indices), episodes, results in zip(calls, updates[::2], updates[1::2]):
        (replayed,) = episodes.blocks  # what the buffer sampled ...
        np.testing.assert_array_equal(indices, replayed.columns[INDICES])  # ... gets the priorities
        assert indices.shape == (32,) and indices.max() < 8
        (td_errors,), (learner_indices,) = results[TD_ERROR_KEY], results[INDICES]  # the update's results
        np.testing.assert_array_equal(learner_indices, indices)
        np.testing.assert_allclose(priorities, np.abs(td_errors) + 1e-6)


class AddFirstObservation(ConnectorV2):
    """A learner piece that adds a column per replayed transition: its first observation's first entry."""

    def __call__(self, *, episodes, batch, **kwargs):
        for episode in episodes:
            self.add_batch_item(batch, "obs0", episode.get_observations(0)[0], single_agent_episode=episode)
        return batch


class LossThatReadsTheColumn(DQNTorchLearner):
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        mismatch = (batch["obs0"] - batch[Columns.OBS][:, 0]).abs().max()
        self.metrics.log_value((module_id, "obs0_mismatch"), float(mismatch), reduce="max")
        self.metrics.log_value((module_id, "obs0_rows"), len(batch["obs0"]), reduce="max")
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


def test_a_custom_learner_connector_adds_a_column_the_loss_sees():
    config = small_config().learners(
        learner_connector=lambda obs_space, act_space: AddFirstObservation(),
        learner_class=LossThatReadsTheColumn,
    )
    algo = config.reporting(min_sample_timesteps_per_iteration=40).build_algo()
    try:
        learner = algo.learner_group.foreach_learner(lambda learner: learner)[0]
        assert [piece.name for piece in learner.learner_connector.connectors][:3] == [
            "AddFirstObservation",
            "AddObservationsFromEpisodesToBatch",
            "AddNextObservationsFromEpisodesToTrainBatch",
        ]
        result = algo.train()
    finally:
        algo.stop()
    module = result["learners"]["default_policy"]
    assert (module["obs0_rows"], module["obs0_mismatch"]) == (32, 0.0)  # every row, row for row
    assert algo.learner_group.weights_seq_no == 18


class DropIndices(ConnectorV2):
    def __call__(self, *, batch, **kwargs):
        for columns in batch.values():
            columns.pop(INDICES)
        return batch


class LearnerThatLosesTheRows(DQNTorchLearner):
    def build(self):
        super().build()
        self.learner_connector.append(DropIndices())


def test_priorities_need_the_replay_indices_row_for_row():
    buffer = {"type": "PrioritizedEpisodeReplayBuffer", "capacity": 1000}
    algo = (
        small_config(replay_buffer_config=buffer).learners(learner_class=LearnerThatLosesTheRows).build_algo()
    )
    try:
        algo.training_step()
        with pytest.raises(
            LearnerError,
            match=r"Module 'default_policy' returned 32 TD errors for 0 replayed rows \('replay_indices'\), expected "
            r"one per row. Fix: keep the 'replay_indices' column row for row",
        ):
            algo.training_step()
    finally:
        algo.stop()


def test_greedy_evaluation():
    config = small_config().evaluation(evaluation_duration=2, evaluation_config={"explore": False})
    algo = config.build_algo()
    try:
        evaluation = algo.evaluate()
    finally:
        algo.stop()
    assert evaluation["env_runners"]["num_episodes"] == 2


def test_checkpoint_restores_learner_state_and_training_continues(tmp_path):
    algo = small_config().build_algo()
    try:
        for _ in range(3):
            algo.training_step()
        path = algo.save_to_path(tmp_path / "ckpt")
        seq_no = algo.learner_group.weights_seq_no
    finally:
        algo.stop()
    policy = load_policy(path)  # no algorithm, no replay: the module and the connectors
    obs = np.array([0.01, -0.02, 0.03, 0.04], np.float32)
    q = algo.get_module().forward_inference({Columns.OBS: torch.from_numpy(obs[None])})[
        Columns.ACTION_DIST_INPUTS
    ]
    assert policy.compute_single_action(obs, explore=False) == int(q.argmax())
    restored = Algorithm.from_checkpoint(path)
    try:
        assert isinstance(restored, DQN) and restored.learner_group.weights_seq_no == seq_no == 4
        assert len(restored.replay_buffer) == 0  # buffers are not checkpointed
        restored.training_step()  # refills 4 steps and learns at once: lifetime steps are past warm-up
        assert len(restored.replay_buffer) == 4 and restored.learner_group.weights_seq_no == 6
    finally:
        restored.stop()


def test_checkpoint_with_the_replay_buffer_samples_what_the_saved_one_would(tmp_path):
    buffer = {"type": "PrioritizedEpisodeReplayBuffer", "capacity": 1000, "store_in_checkpoints": True}
    algo = small_config(replay_buffer_config=buffer).build_algo()
    try:
        for _ in range(5):
            algo.training_step()
        path = algo.save_to_path(tmp_path / "ckpt")
        (saved,) = algo.replay_buffer.sample(16, n_step=2, gamma=0.9, beta=0.4).blocks
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        assert len(restored.replay_buffer) == 20  # 5 training steps of 4 env steps
        (replayed,) = restored.replay_buffer.sample(16, n_step=2, gamma=0.9, beta=0.4).blocks
        assert sorted(replayed.columns) == sorted(saved.columns)
        for column, values in saved.columns.items():  # same rows, n-step sums, priorities and weights
            np.testing.assert_array_equal(replayed.columns[column], values, err_msg=column)
        np.testing.assert_array_equal(replayed.episode_ids, saved.episode_ids)
    finally:
        restored.stop()
    algo = small_config().build_algo()  # by default, checkpoints leave the buffer out
    try:
        algo.training_step()
        assert algo.get_state(components="replay_buffer") == {}
    finally:
        algo.stop()


def test_box_actions_fail_at_build():
    with pytest.raises(
        ModuleError,
        match=r"DQN needs a Discrete action space \(one Q-value per action\), got Box\(-2.0, 2.0, \(1,\), float32\)",
    ):
        DQNConfig().environment("Pendulum-v1").build_algo()
