"""LearnerGroup with remote learners (num_learners=2): sharding, merged results, identical weights."""

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest

from flywheel.algorithms.ppo.config import PPOConfig
from flywheel.core.learner.learner_group import LearnerGroup, merge_results, shard_batch, shard_episodes
from flywheel.episodes import SingleAgentEpisode
from flywheel.episodes.transition_episodes import TransitionBlock, TransitionEpisodes
from flywheel.errors import CheckpointError, LearnerError

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


def episode(length: int, seed: int) -> SingleAgentEpisode:
    rng = np.random.default_rng(seed)
    ep = SingleAgentEpisode(observation_space=OBS_SPACE, action_space=ACT_SPACE)
    ep.add_env_reset(observation=rng.uniform(-1, 1, 3).astype(np.float32))
    for t in range(length):
        ep.add_env_step(
            rng.uniform(-1, 1, 3).astype(np.float32),
            int(rng.integers(2)),
            float(rng.normal()),
            terminated=t == length - 1,
            extra_model_outputs={"action_logp": np.float32(-0.69), "weights_seq_no": 0},
        )
    ep.to_numpy()
    return ep


def test_shard_episodes_balances_env_steps():
    episodes = [episode(n, i) for i, n in enumerate([10, 3, 7, 5, 5])]
    shards = shard_episodes(episodes, 2)
    assert [sorted(len(e) for e in shard) for shard in shards] == [[5, 10], [3, 5, 7]]
    # Fewer episodes than learners: every learner gets all of them.
    assert shard_episodes(episodes[:2], 3) == [episodes[:2]] * 3


def test_shard_batch_splits_every_modules_rows_into_near_equal_parts():
    batch = {"p0": {"obs": np.arange(7), "nested": {"h": np.arange(7) * 10}}, "p1": {"obs": np.arange(2)}}
    shards = shard_batch(batch, 2)
    assert [shard["p0"]["obs"].tolist() for shard in shards] == [[0, 1, 2], [3, 4, 5, 6]]
    assert [shard["p0"]["nested"]["h"].tolist() for shard in shards] == [[0, 10, 20], [30, 40, 50, 60]]
    assert [shard["p1"]["obs"].tolist() for shard in shards] == [[0], [1]]


def test_merge_results_adds_counts_keeps_equal_values_and_averages_the_rest():
    results = [
        {
            "default_policy": {"total_loss": 1.0, "num_module_steps_trained": 10},
            "__all_modules__": {"weights_seq_no": 4},
        },
        {
            "default_policy": {"total_loss": 3.0, "num_module_steps_trained": 12},
            "__all_modules__": {"weights_seq_no": 4},
        },
    ]
    assert merge_results(results) == {
        "default_policy": {"total_loss": 2.0, "num_module_steps_trained": 22},
        "__all_modules__": {"weights_seq_no": 4},
    }


def test_merge_results_joins_per_row_lists_in_rank_order():
    results = [{"p0": {"td_error": [np.array([1.0, 2.0])]}}, {"p0": {"td_error": [np.array([3.0])]}}]
    merged = merge_results(results)["p0"]["td_error"]
    assert [part.tolist() for part in merged] == [[1.0, 2.0], [3.0]]


def test_replayed_transitions_shard_by_rows_without_building_episodes():
    columns = {
        "obs": np.arange(5.0)[:, None], "new_obs": np.arange(5.0)[:, None], "actions": np.zeros(5, int),
        "rewards": np.ones(5, np.float32), "terminateds": np.zeros(5, bool), "truncateds": np.zeros(5, bool),
    }  # fmt: skip
    block = TransitionBlock(columns, np.array(list("abcde"), dtype=object), np.arange(5), "p0")
    replayed = TransitionEpisodes([block, replace(block, module_id="p1").rows(0, 3)])
    shards = shard_episodes(replayed, 2)
    assert not replayed.touched
    assert [[(b.module_id, b.columns["obs"][:, 0].tolist()) for b in shard.blocks] for shard in shards] == [
        [("p0", [0.0, 1.0]), ("p1", [0.0])],
        [("p0", [2.0, 3.0, 4.0]), ("p1", [1.0, 2.0])],
    ]
    assert [len(shard) for shard in shard_episodes(replayed, 4)] == [1, 2, 2, 3]  # p1 is not on learner 0
    few = TransitionEpisodes([block.rows(0, 3)])
    assert [len(shard) for shard in shard_episodes(few, 4)] == [
        3
    ] * 4  # a learner would get no row: all get all


@pytest.mark.ray
def test_remote_learners_update_on_shards_and_hold_identical_weights(ray_session):
    config = (
        PPOConfig()
        # The hand-made episodes carry no action_dist_inputs, which the KL term (on by default) reads.
        .training(
            train_batch_size_per_learner=60, minibatch_size=20, num_epochs=2, lr=1e-2, use_kl_loss=False
        )
        .learners(num_learners=2, num_cpus_per_learner=0)
        .debugging(seed=0)
    )
    group = LearnerGroup(config=config, spaces=(OBS_SPACE, ACT_SPACE))
    try:
        assert not group.is_local
        before = group.get_weights(inference_only=False)["default_policy"]
        per_learner = group.update(episodes=[episode(n, i) for i, n in enumerate([30, 20, 25, 45])])
        assert len(per_learner) == 2
        results = merge_results(per_learner)
        assert results["__all_modules__"]["num_env_steps_trained"] == 120 * 2
        assert results["__all_modules__"]["weights_seq_no"] == 1
        assert np.isfinite(results["default_policy"]["total_loss"])
        ranks = group.foreach_learner(lambda learner: learner.get_weights(inference_only=False))
        assert len(ranks) == 2
        for name, value in ranks[0]["default_policy"].items():
            assert np.array_equal(ranks[1]["default_policy"][name], value), name
            assert not np.array_equal(before[name], value), name
        assert group.foreach_learner(lambda learner: learner.weights_seq_no) == [1, 1]
        rows = 10
        batch = {
            "default_policy": {
                "obs": np.zeros((rows, 3), np.float32), "actions": np.zeros(rows, np.int64),
                "action_logp": np.full(rows, -0.69, np.float32), "action_dist_inputs": np.zeros((rows, 2), np.float32),
                "advantages": np.ones(rows, np.float32), "value_targets": np.ones(rows, np.float32),
            }
        }  # fmt: skip
        results = merge_results(group.update(batch=batch, num_epochs=1))  # each learner: half the rows
        assert results["default_policy"]["num_module_steps_trained"] == rows
        assert group.foreach_learner(lambda learner: learner.weights_seq_no) == [2, 2]
        assert len(group) == 2 and group.is_remote
        with pytest.raises(
            LearnerError,
            match=r"LearnerGroup.update\(\) takes one of batch, episodes or data_iterators, got none",
        ):
            group.update()
    finally:
        group.shutdown()


@pytest.mark.ray
def test_restoring_a_module_checkpoint_reaches_the_remote_learners_and_the_runners(ray_session, tmp_path):
    def config(num_learners, seed):
        return (
            PPOConfig()
            .environment("CartPole-v1")
            .rl_module(model_config={"fcnet_hiddens": [8]})
            .learners(num_learners=num_learners, num_cpus_per_learner=0)
            .debugging(seed=seed)
        )

    source = config(0, seed=1).build_algo()
    path = source.save_to_path(tmp_path / "ckpt")
    expected = source.learner_group.get_weights(inference_only=False)["default_policy"]
    source.stop()
    algo = config(1, seed=2).build_algo()
    try:
        component = "learner_group/learner/rl_module/default_policy"
        algo.restore_from_path(f"{path}/{component}", component=component)
        (restored,) = algo.learner_group.foreach_learner(
            lambda learner: learner.get_weights(inference_only=False)
        )
        assert sorted(restored["default_policy"]) == sorted(expected)
        for name, value in expected.items():
            np.testing.assert_array_equal(restored["default_policy"][name], value, err_msg=name)
        for name, value in algo.get_module().get_state(inference_only=True).items():
            np.testing.assert_array_equal(value, expected[name], err_msg=name)
        with pytest.raises(CheckpointError, match=r"LearnerGroup has no component 'learners/rl_module'"):
            algo.learner_group.restore_from_path(f"{path}/{component}", component="learners/rl_module")
        with pytest.raises(
            CheckpointError,
            match=r"Cannot restore .*/default_policy into LearnerGroup's component 'learner/rl_module': it holds "
            r"DefaultPPOTorchRLModule \(kind RLModule\), expected a checkpoint of kind MultiRLModule\. Fix: pass the "
            r"component it belongs to, e\.g\. restore_from_path\(path, component='learner/rl_module/default_policy'\)",
        ):
            algo.learner_group.restore_from_path(f"{path}/{component}", component="learner/rl_module")
    finally:
        algo.stop()
