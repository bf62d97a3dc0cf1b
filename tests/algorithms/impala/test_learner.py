"""IMPALATorchLearner: V-trace over the pipeline's rows (episode ends, truncation, runs cut at row ends),
the loss terms by hand, and what stateless modules see."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Columns, IMPALAConfig, RLModuleSpec, TorchRLModule, ValueFunctionAPI
from flywheel.algorithms.impala.learner import TimeMajor
from flywheel.connectors.learner.add_one_ts_and_truncate import remove_bootstrap_timesteps
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import LearnerError
from flywheel.testing import CountingEnv

from .test_vtrace import reference_vtrace

GAMMA = 0.5
SEEN_OBS_SHAPES: list = []


class Probe(TorchRLModule, ValueFunctionAPI):
    """Uniform policy over 2 actions and V(s) = s[0], each plus 0 * a weight (so there is something to train)."""

    def setup(self):
        self.w = nn.Parameter(torch.zeros(1))

    def _forward(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        SEEN_OBS_SHAPES.append(tuple(obs.shape))
        return {Columns.ACTION_DIST_INPUTS: torch.zeros(obs.shape[:-1] + (2,)) + 0 * self.w}

    def compute_values(self, batch, embeddings=None):
        return batch[Columns.OBS][..., 0] + 0 * self.w


def chunk(first_t, steps, *, terminated=False, logp=None):
    """Observation t at step t, reward t + 1, the runner's log-prob `logp[i]` (default log 0.5)."""
    ts = list(range(first_t, first_t + steps + 1))
    logp = [math.log(0.5)] * steps if logp is None else logp
    return SingleAgentEpisode(
        observations=[np.array([t], np.float32) for t in ts],
        actions=[0] * steps,
        rewards=[float(t + 1) for t in ts[:-1]],
        extra_model_outputs={Columns.ACTION_LOGP: np.asarray(logp, np.float32)},
        terminated=terminated,
        t_started=first_t,
        len_lookback_buffer=0,
    ).to_numpy()


def learner(**training):
    config = (
        IMPALAConfig()
        .env_runners(rollout_fragment_length=4)
        .training(gamma=GAMMA, **training)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=Probe))
        .debugging(seed=0)
    )
    return config.build_learner(env=CountingEnv())


def rows(learner_, episodes):
    """The learner pipeline's batch for the default module (rows of 4), tensors: the rows are laid out
    before the pipeline's final `NumpyToTensor`. The episodes are given back as they came (the
    pipeline extends them by their bootstrap timesteps)."""
    shared_data = {}
    batch = learner_.learner_connector(
        rl_module=learner_.module, batch={}, episodes=episodes, shared_data=shared_data
    )
    remove_bootstrap_timesteps(shared_data)
    columns = batch["default_policy"]
    assert all(isinstance(data, torch.Tensor) for data in columns.values())
    return columns


# Chunk a: steps 0..4, terminated; chunk b: steps 20..22, cut. Rows of 4 (runs of at most 3 steps):
# [0 1 2 (3)] [3 4 (5) .] [20 21 22 (23)], (x) = the bootstrap element after a run.
EPISODES = [chunk(0, 5, terminated=True), chunk(20, 3)]
# On-policy with V(s) = s, gamma 0.5, each run bootstrapped from its bootstrap element's value:
VS = {0: 3.125, 1: 4.25, 2: 4.5, 3: 6.5, 4: 5.0, 20: 40.625, 21: 39.25, 22: 34.5}
OBS_AT = [[0, 1, 2], [3, 4, 5], [20, 21, 22]]  # the first T - 1 positions of each row


def test_vtrace_on_policy_gives_each_run_its_bootstrapped_n_step_returns():
    impala = learner()
    batch = rows(impala, EPISODES)
    tm = TimeMajor(batch)
    values = tm(batch[Columns.OBS][..., 0])
    vs, advantages = impala.vtrace(
        batch, tm, target_logp=torch.full_like(values, math.log(0.5)), values=values
    )
    assert vs.shape == (3, 3) and tm.steps.shape == (3, 3)
    steps = tm.steps.T.tolist()
    assert steps == [[True, True, True], [True, True, False], [True, True, True]]
    for row, obs_row in enumerate(OBS_AT):
        for pos, obs in enumerate(obs_row):
            if steps[row][pos]:
                assert vs[pos, row].item() == pytest.approx(VS[obs])
                assert advantages[pos, row].item() == pytest.approx(VS[obs] - obs)  # rho = c = 1
    # The terminal observation's element is a bootstrap element: vs = V there, no advantage.
    assert (vs[2, 1].item(), advantages[2, 1].item()) == (5.0, 0.0)


def test_vtrace_off_policy_equals_the_paper_on_each_run():
    rng = np.random.default_rng(0)
    behaviour = {name: rng.normal(-0.7, 0.5, size=n) for name, n in (("a", 5), ("b", 3))}
    episodes = [chunk(0, 5, terminated=True, logp=behaviour["a"]), chunk(20, 3, logp=behaviour["b"])]
    impala = learner(vtrace_clip_rho_threshold=0.8, vtrace_clip_pg_rho_threshold=1.2)
    batch = rows(impala, episodes)
    tm = TimeMajor(batch)
    values = tm(batch[Columns.OBS][..., 0])
    target = torch.full_like(values, math.log(0.5))
    vs, advantages = impala.vtrace(batch, tm, target_logp=target, values=values)
    # (row, steps in it, behaviour log-probs, discounts, bootstrap value) of the three runs:
    runs = [
        (0, [0, 1, 2], behaviour["a"][:3], [GAMMA] * 3, 3.0),
        (1, [3, 4], behaviour["a"][3:], [GAMMA, 0.0], 5.0),
        (2, [20, 21, 22], behaviour["b"], [GAMMA] * 3, 23.0),
    ]
    for row, obs, mu, discounts, bootstrap in runs:
        obs = np.array(obs, float)
        expected_vs, expected_pg = reference_vtrace(
            np.full(len(obs), math.log(0.5)), mu.astype(np.float32), np.array(discounts), obs + 1, obs,
            bootstrap, 0.8, 1.2,
        )  # fmt: skip
        np.testing.assert_allclose(vs[: len(obs), row].numpy(), expected_vs, rtol=1e-5)
        np.testing.assert_allclose(advantages[: len(obs), row].numpy(), expected_pg, rtol=1e-5)


def test_loss_terms_by_hand_and_stateless_modules_see_flat_batches():
    SEEN_OBS_SHAPES.clear()
    impala = learner(vf_loss_coeff=0.5, entropy_coeff=0.01)
    results = impala.update(episodes=EPISODES)["default_policy"]
    assert SEEN_OBS_SHAPES == [(12, 1)]  # 3 rows of 4 elements, one flat batch
    obs = np.array(list(VS), float)
    vs = np.array(list(VS.values()))
    advantages = vs - obs
    assert results["policy_loss"] == pytest.approx(math.log(2) * advantages.mean(), rel=1e-6)
    assert results["vf_loss"] == pytest.approx(0.5 * np.mean((obs - vs) ** 2), rel=1e-6)
    assert results["entropy"] == pytest.approx(math.log(2), rel=1e-6)
    expected_total = results["policy_loss"] + 0.5 * results["vf_loss"] - 0.01 * math.log(2)
    assert results["total_loss"] == pytest.approx(expected_total, rel=1e-6)
    assert results["num_module_steps_trained"] == 8 and results["curr_entropy_coeff"] == 0.01


def test_a_module_without_values_is_refused():
    class PolicyOnly(TorchRLModule):
        def setup(self):
            self.pi = nn.Linear(1, 2)

        def _forward(self, batch, **kwargs):
            return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    config = IMPALAConfig().rl_module(rl_module_spec=RLModuleSpec(module_class=PolicyOnly))
    with pytest.raises(
        LearnerError, match=r"IMPALA needs a value function, but module 'default_policy' \(PolicyOnly\)"
    ):
        config.build_learner(env=CountingEnv())
