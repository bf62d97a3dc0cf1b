"""TQC on Pendulum-v1: SAC with distributional critics whose highest target quantiles are dropped.

    python examples/tqc_pendulum.py                 # until the mean return reaches -250
    python examples/tqc_pendulum.py --stop-iters 5

The settings are examples/sac_pendulum.py's, with 2 critics of 10 quantiles each and the top one of
each dropped from the pooled targets (RLlib's default, 25 quantiles, costs about twice as much per
gradient step here). docs/concepts/tqc.md explains the loss.
"""

import argparse

from flywheel import TQCConfig


def build_config() -> TQCConfig:
    """TQC for Pendulum-v1 (seeds 0 / 1 / 2 reach -250 over the last 10 episodes at 6,000 / 6,000 /
    7,000 env steps)."""
    return (
        TQCConfig()
        .environment("Pendulum-v1")
        .training(
            actor_lr=1e-3,
            critic_lr=1e-3,
            alpha_lr=1e-3,
            train_batch_size_per_learner=256,
            num_steps_sampled_before_learning_starts=1000,
            tau=0.005,
            n_quantiles=10,  # quantiles per critic
            n_critics=2,
            top_quantiles_to_drop_per_net=1,  # 2 of the 20 pooled target quantiles dropped
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .reporting(metrics_num_episodes_for_smoothing=10)
        .debugging(seed=0)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=-250.0, help="stop at this mean episode return")
    parser.add_argument("--stop-timesteps", type=int, default=20_000, help="... or after this many env steps")
    parser.add_argument("--stop-iters", type=int, default=1_000, help="... or after this many iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = build_config()
    if args.smoke:
        config.training(num_steps_sampled_before_learning_starts=64, train_batch_size_per_learner=32)
        config.reporting(min_sample_timesteps_per_iteration=128)
        args.stop_iters = 1

    algo = config.build_algo()
    for _ in range(args.stop_iters):
        result = algo.train()
        ret = result["env_runners"].get("episode_return_mean", float("nan"))
        steps = result["num_env_steps_sampled_lifetime"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f} after {steps} env steps")
        if ret >= args.stop_reward or steps >= args.stop_timesteps:
            break
    algo.stop()
    return result


if __name__ == "__main__":
    main()
