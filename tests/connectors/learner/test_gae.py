"""GeneralAdvantageEstimation against a hand-computed example (terminated / truncated / cut chunks)."""

import numpy as np
import pytest
import torch

from flywheel.columns import Columns
from flywheel.connectors.learner import (
    AddOneTsToEpisodesAndTruncate,
    GeneralAdvantageEstimation,
    default_learner_connectors,
)
from flywheel.connectors.learner.gae import reverse_linear_scan
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConnectorError


class ObsIsValue:
    """Stub value function: V(s) = s[0]."""

    def is_stateful(self):
        return False

    def parameters(self):
        return iter([])

    def compute_values(self, batch, embeddings=None):
        return batch[Columns.OBS][..., 0]


def chunk(obs, rewards, *, terminated=False, truncated=False, lookback_obs=None, t_started=0):
    """Chunk with obs rows [o] and actions 0; `lookback_obs` adds one lookback step (a cut chunk)."""
    observations = [np.array([o], np.float32) for o in obs]
    actions, all_rewards, lookback = [0] * len(rewards), list(rewards), 0
    if lookback_obs is not None:
        observations.insert(0, np.array([lookback_obs], np.float32))
        actions, all_rewards, lookback = [1, *actions], [100.0, *all_rewards], 1
    episode = SingleAgentEpisode(
        observations=observations,
        actions=actions,
        rewards=all_rewards,
        terminated=terminated,
        truncated=truncated,
        t_started=t_started,
        len_lookback_buffer=lookback,
    )
    return episode.to_numpy()


def gae_pipeline(gamma=0.9, lambda_=0.5):
    return ConnectorPipelineV2(
        connectors=[
            AddOneTsToEpisodesAndTruncate(),
            *default_learner_connectors(),
            GeneralAdvantageEstimation(gamma=gamma, lambda_=lambda_),
        ]
    )


def test_gae_hand_computed():
    episodes = [
        chunk([1, 2, 3], [1.0, 1.0], terminated=True),  # V(3) is not used: terminated
        chunk([0, 1, 4], [0.0, 2.0], truncated=True),  # bootstrap from V(4) = 4
        chunk([2, 5], [3.0], lookback_obs=9, t_started=5),  # cut chunk: bootstrap from V(5) = 5
    ]
    batch = gae_pipeline()(
        rl_module={"default_policy": ObsIsValue()}, batch={}, episodes=episodes, shared_data={}
    )
    cols = batch["default_policy"]
    # gamma=0.9, lambda=0.5 (gamma*lambda = 0.45):
    # chunk 1: d0 = 1 + 0.9*2 - 1 = 1.8, d1 = 1 - 2 = -1            -> A = [1.8 + 0.45*(-1), -1] = [1.35, -1]
    # chunk 2: d0 = 0 + 0.9*1 - 0 = 0.9, d1 = 2 + 0.9*4 - 1 = 4.6     -> A = [0.9 + 0.45*4.6, 4.6] = [2.97, 4.6]
    # chunk 3: d0 = 3 + 0.9*5 - 2 = 5.5                                -> A = [5.5]
    raw = np.array([1.35, -1.0, 2.97, 4.6, 5.5])
    np.testing.assert_allclose(cols[Columns.VALUE_TARGETS], raw + [1, 2, 0, 1, 2], rtol=1e-6)
    np.testing.assert_allclose(cols[Columns.VALUE_TARGETS], [2.35, 1.0, 2.97, 5.6, 7.5], rtol=1e-6)
    np.testing.assert_allclose(cols[Columns.ADVANTAGES], (raw - raw.mean()) / raw.std(), rtol=1e-5)
    # The bootstrap rows are gone again, from every column.
    assert cols[Columns.OBS][:, 0].tolist() == [1, 2, 0, 1, 2]
    assert cols[Columns.REWARDS].tolist() == [1.0, 1.0, 0.0, 2.0, 3.0]
    assert cols[Columns.TERMINATEDS].tolist() == [False, True, False, False, False]
    assert cols[Columns.TRUNCATEDS].tolist() == [False, False, False, True, True]
    assert Columns.LOSS_MASK not in cols
    assert cols[Columns.ADVANTAGES].dtype == torch.float32  # tensors in (after NumpyToTensor), tensors out


def test_gae_lambda_one_gives_discounted_returns_minus_values():
    episodes = [chunk([1, 1, 1, 1], [1.0, 1.0, 1.0], truncated=True)]
    batch = gae_pipeline(gamma=0.5, lambda_=1.0)(
        rl_module={"default_policy": ObsIsValue()}, batch={}, episodes=episodes, shared_data={}
    )
    # Returns with bootstrap V=1: G2 = 1 + 0.5*1 = 1.5, G1 = 1 + 0.75 = 1.75, G0 = 1 + 0.875 = 1.875.
    np.testing.assert_allclose(batch["default_policy"][Columns.VALUE_TARGETS], [1.875, 1.75, 1.5], rtol=1e-6)


def test_gae_needs_add_one_ts():
    pipeline = ConnectorPipelineV2(connectors=[*default_learner_connectors(), GeneralAdvantageEstimation()])
    with pytest.raises(ConnectorError, match=r"no AddOneTsToEpisodesAndTruncate ran before it"):
        pipeline(
            rl_module={"default_policy": ObsIsValue()},
            batch={},
            episodes=[chunk([1, 2], [1.0])],
            shared_data={},
        )


def test_gae_skips_modules_without_a_value_function_as_rllib():
    """A module without `compute_values` (e.g. a heuristic one that does not train) gets no advantages;
    PPO's learner refuses to train such a module (tests/algorithms/ppo)."""

    class NoValues:
        def is_stateful(self):
            return False

    batch = gae_pipeline()(
        rl_module={"default_policy": NoValues()},
        batch={},
        episodes=[chunk([1, 2], [1.0])],
        shared_data={},
    )
    cols = batch["default_policy"]
    assert Columns.ADVANTAGES not in cols and cols[Columns.REWARDS].tolist() == [1.0, 0.0]


def test_reverse_linear_scan_matches_the_recursion():
    rng = np.random.default_rng(0)
    x = rng.normal(size=1000)
    a = rng.uniform(0.5, 1.0, size=1000)
    a[rng.choice(1000, 30, replace=False)] = 0.0
    expected = np.zeros(1000)
    running = 0.0
    for t in reversed(range(1000)):
        running = x[t] + a[t] * running
        expected[t] = running
    np.testing.assert_allclose(reverse_linear_scan(x, a), expected, rtol=1e-10, atol=1e-10)


def test_gae_runs_on_a_torch_module():
    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.v = torch.nn.Linear(1, 1)
            torch.nn.init.constant_(self.v.weight, 2.0)
            torch.nn.init.constant_(self.v.bias, 0.0)

        def is_stateful(self):
            return False

        def compute_values(self, batch, embeddings=None):
            return self.v(batch[Columns.OBS]).squeeze(-1)

    batch = gae_pipeline(gamma=1.0, lambda_=1.0)(
        rl_module={"default_policy": Linear()},
        batch={},
        episodes=[chunk([1, 2], [1.0], truncated=True)],
        shared_data={},
    )
    # V(1) = 2, V(2) = 4: target = 1 + 4 = 5.
    np.testing.assert_allclose(batch["default_policy"][Columns.VALUE_TARGETS], [5.0])
