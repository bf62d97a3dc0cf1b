"""PPO on CartPole-v1 with EnvPool's C++ envs: 64 sub-envs stepped as one batch per runner.

    pip install 'flywheel[envpool]'
    python examples/ppo_envpool_cartpole.py             # until the mean return reaches 475

Only the vectorize mode differs from examples/ppo_cartpole.py: episodes, connectors, metrics and
checkpoints are the same as with gymnasium's envs (docs/concepts/environments.md, "EnvPool backend").
"""

import argparse

from flywheel import PPOConfig


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=475.0, help="stop at this mean episode return")
    parser.add_argument(
        "--stop-timesteps", type=int, default=500_000, help="... or after this many env steps"
    )
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = (
        PPOConfig()
        # An EnvPool id (envpool.list_all_envs()); env_config keys go to envpool.make_gymnasium.
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=64, gym_env_vectorize_mode="envpool")
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=3e-4,
            train_batch_size_per_learner=8192,
            minibatch_size=512,
            num_epochs=10,
        )
        .debugging(seed=0)
    )
    if args.smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)

    algo = config.build_algo()
    while True:
        result = algo.train()
        ret = result["env_runners"]["episode_return_mean"]
        if (
            args.smoke
            or ret >= args.stop_reward
            or result["num_env_steps_sampled_lifetime"] >= args.stop_timesteps
        ):
            break
    algo.stop()
    print(
        f"iteration {result['training_iteration']}: mean return {ret:.1f} after "
        f"{result['num_env_steps_sampled_lifetime']} env steps"
    )
    return result


if __name__ == "__main__":
    main()
