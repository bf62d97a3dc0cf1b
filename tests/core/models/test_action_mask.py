"""Action masking in the default modules: forbidden actions get MASKED_LOGIT, never a sample or argmax."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns
from flywheel.algorithms.dqn.rl_module import QF_PREDS, DefaultDQNTorchRLModule
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.algorithms.sac.rl_module import DefaultSACTorchRLModule
from flywheel.core.models import MASKED_LOGIT, masked_observation_space, random_allowed_actions
from flywheel.errors import ModuleError

N = 4
SPACE = gym.spaces.Dict(
    {
        "observations": gym.spaces.Box(0.0, 1.0, (3,), np.float32),
        "action_mask": gym.spaces.Box(0.0, 1.0, (N,), np.float32),
    }
)
MASK = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
OBS = torch.tensor([[0.1, 0.2, 0.3], [0.7, 0.8, 0.9]])
BATCH = {Columns.OBS: {"observations": OBS, "action_mask": MASK}}


def build(cls, **kwargs):
    torch.manual_seed(0)
    return cls(
        observation_space=SPACE,
        action_space=gym.spaces.Discrete(N),
        model_config={"fcnet_hiddens": [8]},
        **kwargs,
    )


def test_the_inner_space_and_what_a_mask_must_look_like():
    assert masked_observation_space(SPACE, gym.spaces.Discrete(N)) == SPACE["observations"]
    assert masked_observation_space(SPACE["observations"], gym.spaces.Discrete(N)) is None
    with pytest.raises(
        ModuleError,
        match=r"observation\['action_mask'\] has shape \(4,\), but the action space "
        r"Discrete\(3\) needs one entry per action: expected \(3,\)\.",
    ):
        masked_observation_space(SPACE, gym.spaces.Discrete(3))
    with pytest.raises(
        ModuleError,
        match=r"needs Discrete actions and a Box or MultiBinary mask of shape \(n,\); "
        r"got actions Box\(-1\.0, 1\.0, \(4,\), float32\)",
    ):
        masked_observation_space(SPACE, gym.spaces.Box(-1.0, 1.0, (N,), np.float32))


def test_ppo_logits_of_forbidden_actions_are_masked_the_others_untouched():
    module = build(DefaultPPOTorchRLModule)
    logits = module.forward_inference(BATCH)[Columns.ACTION_DIST_INPUTS]
    plain = module.pi(module.encoder(OBS))
    assert torch.equal(logits[MASK > 0], plain[MASK > 0])
    assert (logits[MASK == 0] == MASKED_LOGIT).all()
    train = module.forward_train(BATCH)
    assert torch.equal(train[Columns.ACTION_DIST_INPUTS], logits)
    assert module.compute_values(BATCH, train.get(Columns.EMBEDDINGS)).shape == (2,)
    dist = module.get_train_action_dist_cls().from_logits(logits)
    assert torch.isfinite(dist.entropy()).all() and torch.isfinite(dist.kl(dist)).all()
    samples = torch.stack([dist.sample() for _ in range(200)])
    assert set(samples[:, 0].tolist()) == {0, 2} and set(samples[:, 1].tolist()) == {3}


def test_dqn_masks_online_and_target_q_values_and_explores_among_allowed_actions():
    module = build(DefaultDQNTorchRLModule)
    q = module.compute_q_values(BATCH)
    assert (q[MASK == 0] == MASKED_LOGIT).all() and (q[MASK > 0] > MASKED_LOGIT).all()
    target = module.forward_target(BATCH)[QF_PREDS]
    assert (target[MASK == 0] == MASKED_LOGIT).all()
    assert torch.equal(module.forward_train(BATCH)[QF_PREDS], q)
    greedy = module.forward_inference(BATCH)[Columns.ACTION_DIST_INPUTS].argmax(-1)
    assert MASK[0, greedy[0]] == 1 and greedy[1] == 3
    module.epsilon.fill_(1.0)  # every action random
    actions = torch.stack([module.forward_exploration(BATCH)[Columns.ACTIONS] for _ in range(200)])
    assert set(actions[:, 0].tolist()) == {0, 2} and set(actions[:, 1].tolist()) == {3}


def test_random_allowed_actions_are_uniform_over_the_allowed_ones():
    torch.manual_seed(0)
    allowed = torch.tensor([[True, False, True, True]]).expand(6000, N)
    counts = torch.bincount(random_allowed_actions(allowed), minlength=N).tolist()
    assert counts[1] == 0 and all(1800 < c < 2200 for c in (counts[0], counts[2], counts[3]))


def test_discrete_sac_masks_the_policy_and_its_critics_read_the_observations():
    module = build(DefaultSACTorchRLModule)
    logits = module.forward_train(BATCH)[Columns.ACTION_DIST_INPUTS]
    assert (logits[MASK == 0] == MASKED_LOGIT).all()
    log_probs = module.get_train_action_dist_cls().from_logits(logits).log_probs
    alpha = 1000.0  # SAC's alpha * log pi stays finite (no -inf times 0) even for a large alpha
    assert torch.isfinite((log_probs.exp() * alpha * log_probs).sum(-1)).all()
    assert module.compute_q_values(BATCH)["qf_preds"].shape == (2, N)
