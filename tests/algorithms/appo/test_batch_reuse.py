"""APPO's learner on the circular buffer's K uses of each train batch: the learner pipeline runs once per
episode list, the target policy's outputs are kept until the target networks move, and the updates
are exactly those of a learner that computes everything afresh."""

import numpy as np
import pytest
import torch

from flywheel import APPOConfig
from flywheel.algorithms.impala.batch_memo import BatchMemo
from flywheel.connectors.connector import ConnectorV2
from flywheel.testing import CountingEnv

PIPELINE_CALLS: list[int] = []


class CountCalls(ConnectorV2):
    """A learner piece that records how many episodes each pipeline call got."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        PIPELINE_CALLS.append(len(episodes))
        return batch


def config(**training):
    return (
        APPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 7})
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=10)
        .training(
            train_batch_size_per_learner=40,
            learner_connector=lambda obs_space, act_space: CountCalls(),
            **training,
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def episode_lists(n):
    """`n` lists of sampled episodes (one runner, 20 env steps each)."""
    algo = config().build_algo()
    try:
        return [algo.env_runner.sample() for _ in range(n)]
    finally:
        algo.stop()


def test_memo_keeps_a_batch_for_its_uses_then_drops_it():
    memo = BatchMemo(uses_per_batch=2, capacity=2)
    a, b, c = ["a1", "a2"], ["b1"], ["c1"]
    entry = memo.put(a, {"batch": "A"})
    assert memo.get(a) is entry and memo.get(a) is None  # second use was the last: gone
    memo.put(a, {"batch": "A"})
    a.append("a3")  # changed in place: a new batch
    assert memo.get(a) is None and len(memo) == 0
    memo.put(a, {}), memo.put(b, {}), memo.put(c, {})  # over capacity: the oldest (a) goes
    assert memo.get(a) is None and memo.get(b) is not None and memo.get(c) is not None
    assert memo.get(["b1"]) is None  # equal, but another list
    memo.clear()
    assert len(memo) == 0


def test_pipeline_runs_once_per_episode_list_over_its_k_uses():
    lists = episode_lists(3)
    learner = config(circular_buffer_iterations_per_batch=2).build_learner(env=CountingEnv())
    PIPELINE_CALLS.clear()
    for episodes in (lists[0], lists[1], lists[0], lists[1], lists[2]):
        learner.update(episodes=episodes)
    assert [len(episodes) for episodes in lists] == PIPELINE_CALLS
    learner.update(episodes=lists[0])  # its two uses are over: a new batch to this learner
    assert len(PIPELINE_CALLS) == 4


@pytest.mark.parametrize("update_freq", [2, 0])  # target networks move: rarely, after every update
def test_kept_batches_train_exactly_as_fresh_ones(update_freq):
    lists = episode_lists(2)
    kept, fresh = (
        config(
            circular_buffer_iterations_per_batch=2, target_network_update_freq=update_freq, lr=0.05
        ).build_learner(env=CountingEnv())
        for _ in range(2)
    )
    fresh.set_state(kept.get_state())  # the same initial weights
    for episodes in (lists[0], lists[1], lists[1], lists[0]):
        kept.update(episodes=episodes)
        fresh.update(episodes=list(episodes))  # a new list each time: nothing is kept
    kept_weights, fresh_weights = kept.get_state()["rl_module"], fresh.get_state()["rl_module"]
    for module_id, weights in fresh_weights.items():
        for name, value in weights.items():
            np.testing.assert_array_equal(kept_weights[module_id][name], value, err_msg=name)
    target = dict(kept.module["default_policy"].get_target_network_pairs())
    differs = any(
        not torch.equal(t, m)
        for main, tgt in target.items()
        for t, m in zip(tgt.parameters(), main.parameters())
    )
    assert differs == (update_freq != 0)  # freq 0: the target copies the policy after every update
