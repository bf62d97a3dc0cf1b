"""GetActions: exploration samples + log-probs, inference takes the deterministic sample."""

import numpy as np
import torch

from flywheel.columns import Columns
from flywheel.connectors.module_to_env import GetActions
from flywheel.core.distributions import Categorical, DiagGaussian

from ..conftest import StubModule

LOGITS = torch.tensor([[0.0, 50.0, 0.0], [1.0, 2.0, 3.0]])


def call(module, batch, explore):
    return GetActions()(rl_module=module, batch=batch, episodes=[], explore=explore)


def test_explore_samples_and_adds_logp():
    torch.manual_seed(0)
    batch = call(StubModule(dist_cls=Categorical), {Columns.ACTION_DIST_INPUTS: LOGITS}, explore=True)
    actions = batch[Columns.ACTIONS]
    assert actions.shape == (2,) and actions[0].item() == 1
    expected = torch.log_softmax(LOGITS, -1)[torch.arange(2), actions]
    torch.testing.assert_close(batch[Columns.ACTION_LOGP], expected)


def test_explore_samples_follow_the_distribution():
    torch.manual_seed(0)
    logits = torch.log(torch.tensor([[0.2, 0.8]])).expand(4000, 2)
    actions = call(StubModule(dist_cls=Categorical), {Columns.ACTION_DIST_INPUTS: logits}, explore=True)[
        Columns.ACTIONS
    ]
    assert abs(actions.float().mean().item() - 0.8) < 0.03


def test_inference_takes_the_deterministic_sample_without_logp():
    batch = call(StubModule(dist_cls=Categorical), {Columns.ACTION_DIST_INPUTS: LOGITS}, explore=False)
    assert batch[Columns.ACTIONS].tolist() == [1, 2]
    assert Columns.ACTION_LOGP not in batch


def test_uses_the_modules_exploration_or_inference_class():
    module = StubModule()
    module.get_exploration_action_dist_cls = lambda: Categorical
    module.get_inference_action_dist_cls = lambda: DiagGaussian
    inputs = torch.tensor([[0.5, -0.5, 0.0, 0.0]])
    assert call(module, {Columns.ACTION_DIST_INPUTS: inputs}, explore=False)[Columns.ACTIONS].tolist() == [
        [0.5, -0.5]
    ]
    assert call(module, {Columns.ACTION_DIST_INPUTS: inputs}, explore=True)[Columns.ACTIONS].shape == (1,)


def test_skips_when_the_module_chose_actions():
    batch = {Columns.ACTION_DIST_INPUTS: LOGITS, Columns.ACTIONS: np.array([7, 7])}
    out = call(StubModule(dist_cls=Categorical), batch, explore=True)
    assert out[Columns.ACTIONS].tolist() == [7, 7] and Columns.ACTION_LOGP not in out


def test_explore_logp_is_exact_under_inference_mode():
    # Runners call the module-to-env pipeline under torch.inference_mode(); the log-probs are the
    # log-softmax at the sampled actions bit for bit, and the sampling statistics hold.
    torch.manual_seed(4)
    logits = torch.log(torch.tensor([[0.3, 0.7], [0.9, 0.1]])).repeat(5000, 1)
    with torch.inference_mode():
        batch = call(StubModule(dist_cls=Categorical), {Columns.ACTION_DIST_INPUTS: logits}, explore=True)
    actions = batch[Columns.ACTIONS]
    expected = torch.log_softmax(logits, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    assert torch.equal(batch[Columns.ACTION_LOGP], expected)
    assert abs(actions[0::2].float().mean().item() - 0.7) < 0.02
    assert abs(actions[1::2].float().mean().item() - 0.1) < 0.015
