"""Multi-agent PPO learns: two CartPoles as one MultiAgentEnv with two policies, and a turn-based game."""

import pytest

from flywheel import MultiRLModuleSpec, PPOConfig, RLModuleSpec
from flywheel.core.models import NORMC_HEADS
from flywheel.testing.multi_agent_envs import MultiCartPole
from flywheel.testing.tic_tac_toe import RandomLegalMoveModule, TicTacToe

pytestmark = pytest.mark.learning

BUDGET = 200_000


def two_cartpoles_config(seed: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment(MultiCartPole, env_config={"num_agents": 2})
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p" + agent_id[-1]
        )
        .env_runners(num_envs_per_env_runner=8)
        .training(
            gamma=0.98,
            lambda_=0.8,
            clip_param=0.2,
            use_kl_loss=False,
            lr=[[0, 1e-3], [100_000, 1e-4]],
            train_batch_size_per_learner=1024,
            minibatch_size=128,
            num_epochs=10,
            vf_clip_param=float("inf"),
            vf_loss_coeff=0.5,
        )
        # The budget was measured with a near-uniform first policy (with torch's default heads, RLlib's,
        # p0 reached 347 in 200k steps).
        .rl_module(model_config={"fcnet_hiddens": [64, 64], **NORMC_HEADS})
        .debugging(seed=seed)
    )


def test_two_cartpoles_each_module_reaches_400_within_200k_env_steps():
    algo = two_cartpoles_config(seed=0).build_algo()
    try:
        while True:
            result = algo.train()
            steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
            returns = result["env_runners"].get("module_episode_returns_mean", {})
            print(steps, returns, flush=True)
            if (returns and min(returns.values()) >= 400) or steps >= BUDGET:
                break
    finally:
        algo.stop()
    assert sorted(returns) == ["p0", "p1"]
    assert min(returns.values()) >= 400, f"module returns {returns} after {steps} env steps"
    assert steps <= BUDGET


TTT_BUDGET = 300_000


def tic_tac_toe_config(seed: int) -> PPOConfig:
    """ "X" learns (PPO); "O" plays random legal moves and is never trained."""
    return (
        PPOConfig()
        .environment(TicTacToe)
        .multi_agent(
            policies={"learner", "random"},
            policy_mapping_fn=lambda agent_id, episode, **kw: "learner" if agent_id == "X" else "random",
            policies_to_train={"learner"},
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(rl_module_specs={"random": RLModuleSpec(RandomLegalMoveModule)}),
            model_config={"fcnet_hiddens": [64, 64]},
        )
        .env_runners(num_envs_per_env_runner=8)
        .training(
            gamma=0.99,
            lambda_=0.95,
            clip_param=0.2,
            use_kl_loss=False,
            lr=1e-3,
            train_batch_size_per_learner=2048,
            minibatch_size=256,
            num_epochs=10,
            vf_clip_param=float("inf"),
            vf_loss_coeff=0.5,
            entropy_coeff=0.01,
        )
        .debugging(seed=seed)
    )


def test_turn_based_learner_beats_a_random_opponent_in_80_percent_of_games():
    algo = tic_tac_toe_config(seed=0).build_algo()
    try:
        while True:
            result = algo.train()
            steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
            ret = result["env_runners"].get("module_episode_returns_mean", {}).get("learner", -1.0)
            print(steps, ret, flush=True)
            if ret >= 0.9 or steps >= TTT_BUDGET:
                break
        games = algo.env_runner.sample(num_episodes=500)
    finally:
        algo.stop()
    wins = sum(game.agent_episodes["X"].get_return() == 1.0 for game in games)
    assert wins / len(games) >= 0.8, f"won {wins} of {len(games)} games after {steps} env steps"
