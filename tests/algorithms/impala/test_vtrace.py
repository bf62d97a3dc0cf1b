"""`vtrace_torch` against a plain NumPy reference written from the paper's equations.

Espeholt et al. (2018), eq. (1): for a trajectory x_s .. x_{s+n} and per-step discounts gamma_t,

    v_s = V(x_s) + sum_{t=s}^{s+n-1} (prod_{i=s}^{t-1} gamma_i c_i) delta_t
    delta_t = rho_t (r_t + gamma_t V(x_{t+1}) - V(x_t)),   rho_t = min(rho_bar, pi/mu),  c_i = min(1, pi/mu)

and the policy-gradient advantage rho^pg_s (r_s + gamma_s v_{s+1} - V(x_s)), with v_{s+n} = V(x_{s+n}).
"""

import numpy as np
import pytest
import torch

from flywheel.algorithms.impala import vtrace_torch
from flywheel.algorithms.impala.vtrace import reverse_linear_scan


def reference_vtrace(target_logp, behaviour_logp, discounts, rewards, values, bootstrap, rho_bar, pg_rho_bar):
    """One trajectory ([T] arrays), by the paper's sums: no recursion, no vectorization."""
    T = len(rewards)
    ratios = np.exp(np.asarray(target_logp, float) - np.asarray(behaviour_logp, float))
    rho = np.minimum(rho_bar, ratios)
    c = np.minimum(1.0, ratios)
    v_ext = np.append(values, bootstrap)
    vs = np.zeros(T)
    for s in range(T):
        total = values[s]
        for t in range(s, T):
            weight = 1.0
            for i in range(s, t):
                weight *= discounts[i] * c[i]
            delta = rho[t] * (rewards[t] + discounts[t] * v_ext[t + 1] - v_ext[t])
            total += weight * delta
        vs[s] = total
    vs_ext = np.append(vs, bootstrap)
    pg = np.minimum(pg_rho_bar, ratios) * (rewards + discounts * vs_ext[1:] - values)
    return vs, pg


def call_vtrace(target, behaviour, discounts, rewards, values, bootstrap, **clips):
    """`vtrace_torch` on [T, B] float64 tensors; returns numpy."""
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))  # noqa: E731
    vs, pg = vtrace_torch(
        target_action_log_probs=t(target),
        behaviour_action_log_probs=t(behaviour),
        discounts=t(discounts),
        rewards=t(rewards),
        values=t(values),
        bootstrap_values=t(bootstrap),
        **clips,
    )
    return vs.numpy(), pg.numpy()


def test_clipped_importance_weights_and_a_mid_sequence_termination_match_the_paper():
    # Step 1's ratio is e^1.5 (rho clipped to 1.0 and c to 1), step 3's e^-1 (not clipped), and the
    # episode terminates at step 2 (discount 0 there): steps 0-2 do not see steps 3-4 or the bootstrap.
    target = np.array([-0.5, 0.0, -1.0, -2.0, -0.3])
    behaviour = np.array([-0.5, -1.5, -0.7, -1.0, -0.9])
    discounts = np.array([0.9, 0.9, 0.0, 0.9, 0.9])
    rewards = np.array([1.0, 0.5, 2.0, -1.0, 0.25])
    values = np.array([3.0, 2.0, 1.5, 0.5, 1.0])
    bootstrap = 4.0
    vs, pg = call_vtrace(target[:, None], behaviour[:, None], discounts[:, None], rewards[:, None],
                         values[:, None], [bootstrap])  # fmt: skip
    ref_vs, ref_pg = reference_vtrace(target, behaviour, discounts, rewards, values, bootstrap, 1.0, 1.0)
    np.testing.assert_allclose(vs[:, 0], ref_vs, rtol=1e-12)
    np.testing.assert_allclose(pg[:, 0], ref_pg, rtol=1e-12)
    # By hand, the terminated step: rho_2 = e^-0.3, vs_2 = V + rho_2 * (r - V) = 1.5 + 0.7408 * 0.5.
    assert vs[2, 0] == pytest.approx(1.5 + np.exp(-0.3) * 0.5, rel=1e-12)
    # Steps before the termination ignore everything after it: changing the bootstrap moves only 3-4.
    vs_other, _ = call_vtrace(target[:, None], behaviour[:, None], discounts[:, None], rewards[:, None],
                              values[:, None], [-100.0])  # fmt: skip
    np.testing.assert_array_equal(vs_other[:3, 0], vs[:3, 0])
    assert not np.allclose(vs_other[3:, 0], vs[3:, 0])


def test_rho_thresholds_clip_vs_and_advantages_separately():
    rng = np.random.default_rng(3)
    T = 7
    target, behaviour = rng.normal(size=T), rng.normal(size=T)
    discounts, rewards, values = np.full(T, 0.95), rng.normal(size=T), rng.normal(size=T)
    for rho_bar, pg_rho_bar in [(1.0, 1.0), (2.0, 0.5), (0.3, 3.0)]:
        vs, pg = call_vtrace(target[:, None], behaviour[:, None], discounts[:, None], rewards[:, None],
                             values[:, None], [0.7], clip_rho_threshold=rho_bar,
                             clip_pg_rho_threshold=pg_rho_bar)  # fmt: skip
        ref_vs, ref_pg = reference_vtrace(
            target, behaviour, discounts, rewards, values, 0.7, rho_bar, pg_rho_bar
        )
        np.testing.assert_allclose(vs[:, 0], ref_vs, rtol=1e-10)
        np.testing.assert_allclose(pg[:, 0], ref_pg, rtol=1e-10)
    # None: no clipping at all (the reference with infinite thresholds).
    vs, pg = call_vtrace(target[:, None], behaviour[:, None], discounts[:, None], rewards[:, None],
                         values[:, None], [0.7], clip_rho_threshold=None,
                         clip_pg_rho_threshold=None)  # fmt: skip
    ref_vs, ref_pg = reference_vtrace(target, behaviour, discounts, rewards, values, 0.7, np.inf, np.inf)
    np.testing.assert_allclose(vs[:, 0], ref_vs, rtol=1e-10)
    np.testing.assert_allclose(pg[:, 0], ref_pg, rtol=1e-10)


def test_on_policy_vs_are_bootstrapped_n_step_returns():
    # pi = mu (lag 0): every weight is 1 and v_s = r_s + g r_{s+1} + ... + g^(T-s) V(x_T).
    gamma, T = 0.9, 4
    rewards = np.array([1.0, 2.0, 3.0, 4.0])
    values = np.array([10.0, -5.0, 7.0, 0.5])  # the values of visited states drop out on-policy
    bootstrap = 8.0
    logp = np.log(np.array([0.2, 0.7, 0.5, 0.9]))
    vs, pg = call_vtrace(logp[:, None], logp[:, None], np.full((T, 1), gamma), rewards[:, None],
                         values[:, None], [bootstrap])  # fmt: skip
    expected = [
        sum(gamma ** (t - s) * rewards[t] for t in range(s, T)) + gamma ** (T - s) * bootstrap
        for s in range(T)
    ]
    np.testing.assert_allclose(vs[:, 0], expected, rtol=1e-12)
    assert vs[0, 0] == pytest.approx(1 + 0.9 * 2 + 0.81 * 3 + 0.729 * 4 + 0.6561 * 8)
    # Advantages are the one-step TD errors against vs: r_s + g vs_{s+1} - V(x_s).
    np.testing.assert_allclose(pg[:, 0], rewards + gamma * np.append(vs[1:, 0], bootstrap) - values)


def test_on_policy_with_termination_is_the_n_step_return_to_the_episode_end():
    # Terminated at step 1 (discount 0): vs_0 = r_0 + g r_1; after it, a new episode bootstraps.
    gamma = 0.5
    rewards = np.array([1.0, 1.0, 1.0])
    discounts = np.array([gamma, 0.0, gamma])
    logp = np.zeros(3)
    vs, _ = call_vtrace(logp[:, None], logp[:, None], discounts[:, None], rewards[:, None],
                        np.full((3, 1), 100.0), [6.0])  # fmt: skip
    np.testing.assert_allclose(vs[:, 0], [1.5, 1.0, 1.0 + 0.5 * 6.0])


def test_batch_columns_are_independent_trajectories():
    rng = np.random.default_rng(0)
    T, B = 9, 5
    target, behaviour = rng.normal(size=(T, B)), rng.normal(size=(T, B))
    discounts = np.where(rng.random((T, B)) < 0.2, 0.0, 0.97)
    rewards, values, bootstrap = rng.normal(size=(T, B)), rng.normal(size=(T, B)), rng.normal(size=B)
    vs, pg = call_vtrace(target, behaviour, discounts, rewards, values, bootstrap)
    for b in range(B):
        ref_vs, ref_pg = reference_vtrace(
            target[:, b],
            behaviour[:, b],
            discounts[:, b],
            rewards[:, b],
            values[:, b],
            bootstrap[b],
            1.0,
            1.0,
        )
        np.testing.assert_allclose(vs[:, b], ref_vs, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(pg[:, b], ref_pg, rtol=1e-10, atol=1e-12)


def test_zero_importance_weight_steps_bootstrap_from_their_own_value():
    # A step with target log-prob -inf (weight 0) ends the trace there: vs = V at that step, and the
    # step before it bootstraps from that V (how the learner marks bootstrap and padding elements).
    logp = np.zeros((4, 1))
    target = logp.copy()
    target[2, 0] = -np.inf
    values = np.array([[1.0], [2.0], [5.0], [7.0]])
    vs, pg = call_vtrace(target, logp, np.full((4, 1), 0.5), np.ones((4, 1)), values, [9.0])
    assert vs[2, 0] == 5.0 and pg[2, 0] == 0.0
    assert vs[1, 0] == pytest.approx(1.0 + 0.5 * 5.0)
    assert vs[0, 0] == pytest.approx(1.0 + 0.5 * vs[1, 0])


def test_outputs_have_no_gradient_and_the_input_shapes():
    values = torch.zeros(3, 2, requires_grad=True)
    vs, pg = vtrace_torch(
        target_action_log_probs=torch.zeros(3, 2),
        behaviour_action_log_probs=torch.zeros(3, 2),
        discounts=torch.full((3, 2), 0.9),
        rewards=torch.ones(3, 2),
        values=values,
        bootstrap_values=torch.zeros(2),
    )
    assert vs.shape == pg.shape == (3, 2)
    assert not vs.requires_grad and not pg.requires_grad


@pytest.mark.parametrize("length", [1, 2, 5, 16, 33])
def test_reverse_linear_scan_equals_the_recursion(length):
    rng = np.random.default_rng(length)
    x, a = rng.normal(size=(length, 3)), rng.random((length, 3))
    expected, following = np.zeros((length, 3)), np.zeros(3)
    for t in reversed(range(length)):
        following = x[t] + a[t] * following
        expected[t] = following
    np.testing.assert_allclose(reverse_linear_scan(torch.tensor(x), torch.tensor(a)).numpy(), expected)
