"""BC and MARWIL learn CartPole, CQL and IQL learn Pendulum from recorded data (the learning
targets of issues 18 and 36, fixed seeds)."""

import pytest

from flywheel import BCConfig, IQLConfig, MARWILConfig
from flywheel.core.models import NORMC_HEADS

from .conftest import CQL_EXAMPLE, record

pytestmark = pytest.mark.learning


def train(cls, inputs, iterations=20, interval=5, heads=None):
    """The best greedy evaluation mean (10 episodes, every `interval` iterations) within `iterations`;
    `heads`: extra `model_config` keys (default: torch's initialization, RLlib's)."""
    config = (
        cls()
        .environment("CartPole-v1")
        .offline_data(input_=[str(folder) for folder in inputs])
        .training(lr=1e-3, train_batch_size_per_learner=2000, minibatch_size=250)
        .rl_module(model_config={"fcnet_hiddens": [64, 64], **(heads or {})})
        .evaluation(
            evaluation_interval=interval, evaluation_duration=10, evaluation_config={"explore": False}
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    best = max(
        result["evaluation"]["env_runners"]["episode_return_mean"]
        for result in (algo.train() for _ in range(iterations))
        if "evaluation" in result
    )
    algo.stop()
    return best


def test_bc_on_100_expert_episodes_reaches_475_within_40_iterations(expert_data):
    """Greedy evaluations every 5 iterations, seed 0: 92, 106, 130, 174, 341, then 500 (86, 106, 110,
    212, 286, 499 while single epochs were shuffled; with `NORMC_HEADS` then: 105, 119, 107, 316, 439, 500)."""
    folder, expert_return = expert_data
    assert expert_return >= 475
    assert train(BCConfig, [folder], iterations=40) >= 475


def test_marwil_on_expert_and_as_many_random_steps_reaches_400_and_beats_bc(expert_data, tmp_path):
    """The issue's mix, balanced by rows: the 100 expert episodes (~49k rows) and as many random-policy
    steps, 2,300 random episodes (~22 steps each, ~50k rows), so half the data is random, as in the
    issue's intent. With only 100 random episodes (4% of the rows) greedy BC reaches 500 as well
    (random actions do not move the argmax), and the comparison says nothing. Here greedy BC, which
    imitates every action alike, stays at 85-159 within 60 iterations (seeds 0-3), while MARWIL,
    weighting actions by exp(beta * A / c), reaches 499-500 (see docs/concepts/offline.md). Since single
    epochs keep the sampled row order (RLlib's), seed 0 gives MARWIL 168, 356, 436 and BC 43, 61, 74."""
    folder, _ = expert_data
    record(tmp_path, num_episodes=2300, seed=3)
    # Measured with a near-uniform first policy; with torch's default heads MARWIL reaches 248 in 60.
    marwil = train(MARWILConfig, [folder, tmp_path], iterations=60, interval=20, heads=NORMC_HEADS)
    bc = train(BCConfig, [folder, tmp_path], iterations=60, interval=20, heads=NORMC_HEADS)
    assert marwil >= 400, (marwil, bc)
    assert bc <= marwil - 200, (marwil, bc)


def test_cql_on_the_replay_of_a_20k_step_sac_run_reaches_minus_400(sac_pendulum_replay):
    """The example's CQL (512 shuffled rows per update, bc_iters=200, actor_lr=1e-3, critic_lr=3e-3,
    tau=0.02) on every row SAC sampled in 20,000 env steps: greedy return after 1,500 updates, -181 /
    -144 / -130 for seeds 0 / 1 / 2 (RLlib's tuned example stops at -700). Measured on this 2-core
    machine shared with other jobs (load 5-6): the whole test 143-168 s in 3 runs (recording 83-102 s
    in the session fixture, CQL 60-62 s); up to 140 s + 95 s under heavier load."""
    folder, sac_return = sac_pendulum_replay
    assert sac_return >= -400  # the data holds a good policy's steps (SAC: -206 at 20,000 steps)
    config = CQL_EXAMPLE["build_config"](str(folder)).evaluation(evaluation_interval=6)
    algo = config.build_algo()
    result = [algo.train() for _ in range(6)][-1]
    algo.stop()
    assert result["learners"]["__all_modules__"]["weights_seq_no"] == 1500
    assert result["evaluation"]["env_runners"]["episode_return_mean"] >= -400


def iql_pendulum_config(folder):
    """IQL at the settings the learning test measured: RLlib's beta / expectile / lr / tau defaults
    (0.1 / 0.8 / 3e-4 / 1.0) are sized for long runs; here beta=3 and expectile=0.7 (the paper's),
    tau=0.05 and lr=1e-3 so that values propagate within 2,000 updates, and gamma=0.95 so that the
    critics have a 20-step horizon to fill. 256 shuffled rows per update, [256, 256] networks."""
    return (
        IQLConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=str(folder), dataset_num_iters_per_learner=500)
        .training(
            train_batch_size_per_learner=256,
            beta=3.0,
            expectile=0.7,
            tau=0.05,
            gamma=0.95,
            actor_lr=1e-3,
            critic_lr=1e-3,
            value_lr=1e-3,
        )
        .evaluation(
            evaluation_interval=4,
            evaluation_duration=10,
            evaluation_config={"explore": False},
        )
        .debugging(seed=0)
    )


def test_iql_on_the_replay_of_a_20k_step_sac_run_reaches_minus_400(sac_pendulum_replay):
    """IQL on the rows CQL's test learns from (SAC's replay: 40 poor episodes, 20 mediocre, 40 good):
    greedy return -206 after 2,000 updates (seed 0; with an evaluation after every 500 updates instead:
    -1,261 / -420 / -288 / -138). Measured on this 2-core machine shared with other jobs, 3 runs: 82 s
    and 92 s at load 2-4, 372 s at load 16-25 (the session fixture's SAC recording not included: 184 s
    at load 2-4)."""
    folder, _ = sac_pendulum_replay
    algo = iql_pendulum_config(folder).build_algo()
    result = [algo.train() for _ in range(4)][-1]
    algo.stop()
    assert result["learners"]["__all_modules__"]["weights_seq_no"] == 2000
    greedy = result["evaluation"]["env_runners"]["episode_return_mean"]
    assert greedy >= -400, greedy
