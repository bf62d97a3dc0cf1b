"""Tic-tac-toe: a PPO player learns against a fixed opponent that plays random legal moves.

    python examples/turn_based_game.py

Players alternate and only the player to move observes, so each agent's steps span two env
steps and its reward arrives with its next observation (or at the end of the game). The
opponent is a module with no weights (`RandomLegalMoveModule`), held out of training with
`policies_to_train`. After training, 500 games count how often the learned player wins.
"""

import argparse

from flywheel import MultiRLModuleSpec, PPOConfig, RLModuleSpec
from flywheel.testing import RandomLegalMoveModule, TicTacToe


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--stop-reward",
        type=float,
        default=0.9,
        help="stop at this mean score of the learner (win 1, draw 0.5)",
    )
    parser.add_argument(
        "--stop-timesteps", type=int, default=300_000, help="... or after this many env steps"
    )
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = (
        PPOConfig()
        .environment(TicTacToe)
        .multi_agent(
            policies={"learner", "random"},
            policy_mapping_fn=lambda agent_id, episode, **kw: "learner" if agent_id == "X" else "random",
            policies_to_train={"learner"},
        )
        # Spaces come from the env; only the opponent's module class differs from PPO's default.
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(rl_module_specs={"random": RLModuleSpec(RandomLegalMoveModule)}),
            model_config={"fcnet_hiddens": [64, 64]},
        )
        .env_runners(num_envs_per_env_runner=8)
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            gamma=0.99,
            lambda_=0.95,
            lr=1e-3,
            train_batch_size_per_learner=2048,
            minibatch_size=256,
            num_epochs=10,
            vf_clip_param=float("inf"),
            vf_loss_coeff=0.5,
            entropy_coeff=0.01,
        )
        .debugging(seed=0)
    )
    if args.smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)

    algo = config.build_algo()
    while True:
        result = algo.train()
        env_runners = result["env_runners"]
        ret = env_runners.get("module_episode_returns_mean", {}).get("learner", float("nan"))
        steps = env_runners["num_env_steps_sampled_lifetime"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.2f} after {steps} env steps")
        if args.smoke or ret >= args.stop_reward or steps >= args.stop_timesteps:
            break
    games = algo.env_runner.sample(num_episodes=20 if args.smoke else 500)
    wins = sum(game.agent_episodes["X"].get_return() == 1.0 for game in games)
    print(f"the learned player won {wins} of {len(games)} games against random legal moves")
    algo.stop()
    return result


if __name__ == "__main__":
    main()
