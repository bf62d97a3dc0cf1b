import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel.core.distributions import (
    Categorical,
    Deterministic,
    DiagGaussian,
    MultiCategorical,
    MultiDistribution,
    SquashedGaussian,
    distribution_for_space,
)
from flywheel.errors import ModuleError

LOGITS = torch.tensor([[0.0, math.log(3.0)], [math.log(2.0), math.log(2.0)]])  # probs [.25,.75], [.5,.5]


# Categorical.


def test_categorical_logp_entropy_kl_closed_form():
    dist = Categorical.from_logits(LOGITS)
    assert torch.allclose(dist.logp(torch.tensor([1, 0])), torch.tensor([math.log(0.75), math.log(0.5)]))
    h0 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert torch.allclose(dist.entropy(), torch.tensor([h0, math.log(2.0)]))
    other = Categorical.from_logits(torch.zeros(2, 2))
    kl0 = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)
    assert torch.allclose(dist.kl(other), torch.tensor([kl0, 0.0]), atol=1e-7)


def test_categorical_deterministic_sample_and_int_dtype():
    dist = Categorical.from_logits(torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.0]]))
    assert dist.deterministic_sample().tolist() == [1, 0]
    assert dist.sample().dtype == torch.int64


def test_categorical_sampling_frequencies_with_seed():
    torch.manual_seed(0)
    probs = torch.tensor([0.1, 0.2, 0.7])
    dist = Categorical.from_logits(probs.log().expand(20_000, 3))
    freq = torch.bincount(dist.sample(), minlength=3).float() / 20_000
    assert torch.allclose(freq, probs, atol=0.01)


def test_categorical_never_samples_an_action_of_probability_zero_and_repeats_under_a_seed():
    logits = torch.tensor([0.0, float("-inf"), 1.0]).expand(10_000, 3)
    torch.manual_seed(1)
    actions = Categorical.from_logits(logits).sample()
    assert set(actions.tolist()) == {0, 2}
    torch.manual_seed(1)
    assert torch.equal(Categorical.from_logits(logits).sample(), actions)
    torch.manual_seed(1)
    assert torch.equal(Categorical(probs=torch.softmax(logits, -1)).sample(), actions)


def test_categorical_works_with_time_dimension():
    logits = torch.randn(4, 5, 3)
    dist = Categorical.from_logits(logits)
    actions = dist.sample()
    assert actions.shape == (4, 5)
    expected = torch.log_softmax(logits, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(dist.logp(actions), expected)


def test_categorical_rsample_is_a_straight_through_one_hot():
    logits = LOGITS.clone().requires_grad_(True)
    sample = Categorical.from_logits(logits).rsample()
    assert sample.detach().sum(-1).tolist() == [1.0, 1.0] and set(sample.detach().flatten().tolist()) <= {
        0,
        1,
    }
    (sample * torch.tensor([1.0, 0.0])).sum().backward()  # the gradient of the first action's probability
    probs = torch.softmax(LOGITS, -1)[:, 0]
    assert torch.allclose(logits.grad[:, 0], probs * (1 - probs))


def test_categorical_from_probs_and_exactly_one_input():
    dist = Categorical(probs=torch.tensor([[0.25, 0.75]]))
    assert dist.logp(torch.tensor([1])).item() == pytest.approx(math.log(0.75))
    with pytest.raises(ModuleError, match="Categorical takes exactly one of logits= and probs="):
        Categorical()


def test_to_deterministic_samples_the_most_likely_action_with_logp_zero():
    det = Categorical.from_logits(LOGITS).to_deterministic()
    assert isinstance(det, Deterministic) and det.sample().tolist() == [1, 0]
    assert det.logp(det.sample()).tolist() == [0.0, 0.0] and det.to_deterministic() is det
    gauss = DiagGaussian.from_logits(torch.tensor([[1.0, -2.0, 0.0, 0.0]])).to_deterministic()
    assert gauss.sample().tolist() == [[1.0, -2.0]]
    multi = MultiDistribution((Categorical(LOGITS), DiagGaussian(torch.zeros(2, 1), torch.ones(2, 1))))
    actions = multi.to_deterministic().sample()
    assert actions[0].tolist() == [1, 0] and actions[1].tolist() == [[0.0], [0.0]]


def test_partial_dist_cls_passes_its_arguments_on():
    partial = MultiDistribution.get_partial_dist_cls(
        child_distribution_cls_struct=(Categorical, DiagGaussian), input_lens=(3, 2)
    )
    dist = partial.from_logits(torch.zeros(4, 5))
    assert type(dist) is partial and issubclass(partial, MultiDistribution)
    a1, a2 = dist.sample()
    assert a1.shape == (4,) and a2.shape == (4, 1)
    expected = math.log(1 / 3) + DiagGaussian(torch.zeros(1), torch.ones(1)).logp(a2[0]).item()
    assert dist.logp((a1, a2))[0].item() == pytest.approx(expected, rel=1e-6)
    assert partial.required_input_dim(gym.spaces.Discrete(3)) == 5
    with pytest.raises(ModuleError, match=r"already set \['input_lens'\]"):
        partial.from_logits(torch.zeros(4, 5), input_lens=(2, 3))


def test_categorical_logp_has_gradient():
    logits = LOGITS.clone().requires_grad_(True)
    Categorical.from_logits(logits).logp(torch.tensor([1, 0])).sum().backward()
    assert torch.allclose(logits.grad, torch.tensor([[-0.25, 0.25], [0.5, -0.5]]))


# DiagGaussian.


def test_diag_gaussian_logp_entropy_kl_match_torch_normal():
    mean = torch.tensor([[0.5, -1.0], [0.0, 2.0]])
    log_std = torch.tensor([[0.0, -0.5], [0.3, 0.1]])
    dist = DiagGaussian.from_logits(torch.cat([mean, log_std], -1))
    ref = torch.distributions.Normal(mean, log_std.exp())
    value = torch.tensor([[0.1, 0.2], [-0.3, 1.5]])
    assert torch.allclose(dist.logp(value), ref.log_prob(value).sum(-1))
    assert torch.allclose(dist.entropy(), ref.entropy().sum(-1))
    other_mean, other_log_std = torch.tensor([[0.0, 0.0]]), torch.tensor([[0.2, -0.1]])
    other = DiagGaussian(other_mean, other_log_std.exp())
    ref_other = torch.distributions.Normal(other_mean, other_log_std.exp())
    assert torch.allclose(dist.kl(other), torch.distributions.kl_divergence(ref, ref_other).sum(-1))


def test_diag_gaussian_samples():
    dist = DiagGaussian.from_logits(torch.tensor([[1.0, -2.0, math.log(0.5), math.log(2.0)]]))
    assert dist.deterministic_sample().tolist() == [[1.0, -2.0]]
    torch.manual_seed(0)
    many = DiagGaussian.from_logits(
        torch.tensor([1.0, -2.0, math.log(0.5), math.log(2.0)]).expand(20_000, 4)
    ).sample()
    assert many.shape == (20_000, 2)
    assert torch.allclose(many.mean(0), torch.tensor([1.0, -2.0]), atol=0.05)
    assert torch.allclose(many.std(0), torch.tensor([0.5, 2.0]), atol=0.05)


def test_diag_gaussian_rsample_has_gradient_and_sample_has_none():
    inputs = torch.zeros(3, 4, requires_grad=True)
    dist = DiagGaussian.from_logits(inputs)
    assert dist.rsample().requires_grad
    assert not dist.sample().requires_grad


def test_diag_gaussian_required_input_dim_and_bad_space():
    assert DiagGaussian.required_input_dim(gym.spaces.Box(-1, 1, (3,))) == 6
    with pytest.raises(ModuleError, match=r"need a 1-D Box action space, got Box\(-1.0, 1.0, \(2, 2\)"):
        distribution_for_space(gym.spaces.Box(-1, 1, (2, 2)))


# SquashedGaussian.


def test_squashed_gaussian_samples_within_bounds():
    space = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 10.0], np.float32))
    cls = distribution_for_space(space, squashed=True)
    assert issubclass(cls, SquashedGaussian)
    torch.manual_seed(0)
    inputs = torch.cat([torch.randn(1000, 2) * 3, torch.zeros(1000, 2) + 1.0], -1)
    samples = cls.from_logits(inputs).sample()
    assert torch.all(samples[:, 0] >= -2) and torch.all(samples[:, 0] <= 2)
    assert torch.all(samples[:, 1] >= 0) and torch.all(samples[:, 1] <= 10)
    # tanh(0) = 0: the mode of a zero-mean squashed Gaussian is the middle of the box.
    middle = cls.from_logits(torch.zeros(1, 4)).deterministic_sample()
    assert torch.allclose(middle, torch.tensor([[0.0, 5.0]]))


def test_squashed_gaussian_logp_is_change_of_variables():
    cls = distribution_for_space(gym.spaces.Box(0.0, 4.0, (1,)), squashed=True)
    mean, log_std = torch.tensor([[0.3]]), torch.tensor([[-0.2]])
    dist = cls.from_logits(torch.cat([mean, log_std], -1))
    u = torch.tensor([[0.7]])
    action = 2.0 + 2.0 * torch.tanh(u)
    base = torch.distributions.Normal(mean, log_std.exp()).log_prob(u).sum(-1)
    expected = base - torch.log(2.0 * (1 - torch.tanh(u) ** 2)).sum(-1)
    assert torch.allclose(dist.logp(action), expected, atol=1e-5)


def test_squashed_gaussian_kl_equals_gaussian_kl_and_no_entropy():
    cls = distribution_for_space(gym.spaces.Box(-1.0, 1.0, (2,)), squashed=True)
    a, b = torch.tensor([[0.1, 0.2, 0.0, 0.3]]), torch.tensor([[0.0, -0.1, 0.1, 0.0]])
    assert torch.allclose(
        cls.from_logits(a).kl(cls.from_logits(b)), DiagGaussian.from_logits(a).kl(DiagGaussian.from_logits(b))
    )
    with pytest.raises(NotImplementedError, match="no closed-form entropy"):
        cls.from_logits(a).entropy()


def test_squashed_gaussian_needs_finite_bounds():
    with pytest.raises(ModuleError, match="SquashedGaussian needs finite Box bounds"):
        distribution_for_space(gym.spaces.Box(-np.inf, np.inf, (2,)), squashed=True)


# MultiCategorical.


def test_multi_categorical_splits_inputs_by_nvec():
    cls = distribution_for_space(gym.spaces.MultiDiscrete([2, 3]))
    assert issubclass(cls, MultiCategorical) and cls.input_lens == (2, 3)
    assert cls.required_input_dim(gym.spaces.MultiDiscrete([2, 3])) == 5
    inputs = torch.tensor([[0.0, math.log(3.0), 0.0, 0.0, 5.0]])
    dist = cls.from_logits(inputs)
    assert dist.deterministic_sample().tolist() == [[1, 2]]
    part = Categorical(torch.tensor([[0.0, 0.0, 5.0]]))
    expected_logp = math.log(0.75) + part.logp(torch.tensor([0])).item()
    assert dist.logp(torch.tensor([[1, 0]])).item() == pytest.approx(expected_logp, rel=1e-6)
    expected_entropy = Categorical(inputs[:, :2]).entropy() + part.entropy()
    assert torch.allclose(dist.entropy(), expected_entropy)
    assert torch.allclose(dist.kl(dist), torch.zeros(1))
    assert dist.sample().shape == (1, 2)


# MultiDistribution.


def test_multi_distribution_for_dict_space():
    space = gym.spaces.Dict({"move": gym.spaces.Box(-1, 1, (2,)), "fire": gym.spaces.Discrete(3)})
    cls = distribution_for_space(space)
    assert issubclass(cls, MultiDistribution)
    names = list(space.spaces)
    lens = {"move": 4, "fire": 3}
    assert cls.input_lens == tuple(lens[n] for n in names)
    assert cls.required_input_dim(space) == 7
    inputs = torch.randn(5, 7)
    dist = cls.from_logits(inputs)
    sample = dist.sample()
    assert set(sample) == {"move", "fire"}
    assert sample["move"].shape == (5, 2) and sample["fire"].shape == (5,)
    parts = dict(zip(names, torch.split(inputs, cls.input_lens, -1)))
    move, fire = DiagGaussian.from_logits(parts["move"]), Categorical(parts["fire"])
    assert torch.allclose(dist.logp(sample), move.logp(sample["move"]) + fire.logp(sample["fire"]))
    assert torch.allclose(dist.entropy(), move.entropy() + fire.entropy())
    assert torch.allclose(dist.kl(dist), torch.zeros(5), atol=1e-6)
    assert dist.deterministic_sample()["fire"].tolist() == fire.deterministic_sample().tolist()


def test_multi_distribution_nested_tuple_space():
    space = gym.spaces.Tuple(
        (gym.spaces.Discrete(2), gym.spaces.Dict({"a": gym.spaces.MultiDiscrete([2, 2])}))
    )
    cls = distribution_for_space(space)
    assert cls.input_lens == (2, 4)
    sample = cls.from_logits(torch.zeros(3, 6)).sample()
    assert isinstance(sample, tuple) and sample[0].shape == (3,) and sample[1]["a"].shape == (3, 2)
    # Uniform logits: log(1/2) for the Discrete plus two log(1/2) for the MultiDiscrete.
    logp = cls.from_logits(torch.zeros(3, 6)).logp(sample)
    assert torch.allclose(logp, torch.full((3,), 3 * math.log(0.5)))


def test_multi_distribution_squashed_children_and_rsample():
    space = gym.spaces.Dict({"x": gym.spaces.Box(0.0, 1.0, (1,))})
    cls = distribution_for_space(space, squashed=True)
    inputs = torch.zeros(2, 2, requires_grad=True)
    sample = cls.from_logits(inputs).rsample()
    assert sample["x"].requires_grad
    assert torch.all((sample["x"] >= 0) & (sample["x"] <= 1))


def test_unsupported_action_space_is_named():
    with pytest.raises(ModuleError, match=r"No action distribution for action space MultiBinary\(3\)"):
        distribution_for_space(gym.spaces.MultiBinary(3))


def test_default_classes_for_simple_spaces():
    assert distribution_for_space(gym.spaces.Discrete(4)) is Categorical
    assert distribution_for_space(gym.spaces.Box(-1, 1, (2,))) is DiagGaussian
    assert Categorical.required_input_dim(gym.spaces.Discrete(4)) == 4


def test_categorical_never_samples_a_masked_action():
    torch.manual_seed(0)
    logits = torch.tensor([0.0, -torch.inf, 0.0]).expand(50_000, 3)
    assert not (Categorical.from_logits(logits).sample() == 1).any()


def test_required_input_dim_of_a_space_the_class_does_not_fit_names_the_space():
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    with pytest.raises(ModuleError, match=r"Categorical needs a Discrete action space, got Box\("):
        Categorical.required_input_dim(box)
    with pytest.raises(ModuleError, match=r"MultiCategorical needs a MultiDiscrete action space, got Box\("):
        MultiCategorical.required_input_dim(box)
    with pytest.raises(ModuleError, match=r"Deterministic needs an action space with a shape, got Dict\("):
        Deterministic.required_input_dim(gym.spaces.Dict({"a": box}))
    with pytest.raises(
        ModuleError, match=r"MultiDistribution needs a Dict or Tuple action space, got Discrete"
    ):
        MultiDistribution.required_input_dim(gym.spaces.Discrete(3))
    assert MultiDistribution.required_input_dim(gym.spaces.Tuple((box, gym.spaces.Discrete(3)))) == 7


def test_categorical_samples_pass_a_chi_square_test_per_row_and_time_step():
    # 4 rows x 3 time steps of different distributions (one with a near-zero and one with a zero
    # probability), 30,000 draws each: chi-square with 3 degrees of freedom stays below 16.3
    # (p = 0.001) for every distribution.
    torch.manual_seed(1)
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.97, 0.01, 0.01, 0.01], [0.25] * 4, [0.5, 0.0, 0.25, 0.25]])
    probs = probs.unsqueeze(1).expand(4, 3, 4)
    n = 30_000
    samples = Categorical.from_logits(probs.log().expand(n, 4, 3, 4)).sample()
    assert samples.shape == (n, 4, 3) and samples.dtype == torch.int64
    counts = torch.nn.functional.one_hot(samples, 4).sum(0).double()  # [4, 3, 4]
    expected = probs.double() * n
    support = expected > 0
    assert (counts[~support] == 0).all()
    chi2 = torch.where(support, (counts - expected) ** 2 / expected.clamp_min(1e-12), 0.0).sum(-1)
    assert (chi2 < 16.3).all(), chi2


def test_categorical_from_probs_samples_by_those_probabilities():
    torch.manual_seed(2)
    dist = Categorical(probs=torch.tensor([0.6, 0.3, 0.1]).expand(40_000, 3))
    freq = torch.bincount(dist.sample(), minlength=3).double() / 40_000
    assert torch.allclose(freq, torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64), atol=0.008)


def test_categorical_logp_of_its_samples_is_the_log_softmax_at_them_exactly():
    torch.manual_seed(3)
    logits = torch.randn(5, 7, 6) * 3
    dist = Categorical.from_logits(logits)
    actions = dist.sample()
    expected = torch.log_softmax(logits, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    assert torch.equal(dist.logp(actions), expected)


def test_categorical_logp_of_its_sample_and_of_any_equal_tensor_agree():
    # logp of the distribution's own last sample reuses its index; any other tensor is indexed anew.
    torch.manual_seed(4)
    logits = torch.randn(6, 5)
    dist = Categorical.from_logits(logits)
    first = dist.sample()
    second = dist.sample()
    expected = torch.log_softmax(logits, -1)
    assert torch.equal(dist.logp(second), expected.gather(-1, second.unsqueeze(-1)).squeeze(-1))
    assert torch.equal(dist.logp(first), expected.gather(-1, first.unsqueeze(-1)).squeeze(-1))
    assert torch.equal(dist.logp(second.clone().int()), dist.logp(second))
    assert first.shape == second.shape == (6,) and second.dtype == torch.int64
