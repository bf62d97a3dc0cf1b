"""DreamerV3 on CartPole-v1: a world model learned from replayed sequences, an actor and a critic
trained in its imagination.

    python examples/dreamerv3_cartpole.py                 # until the mean return reaches 450
    python examples/dreamerv3_cartpole.py --stop-iters 5

The settings are RLlib 2.60's defaults with model_size "XS" (one update of 16 x 64 replayed steps per
env step, training_ratio 1024): slow on CPU, each env step costs a full update. docs/concepts/dreamerv3.md
explains the losses and the settings that matter on CPU.
"""

import argparse

from flywheel import DreamerV3Config


def build_config() -> DreamerV3Config:
    """DreamerV3 for CartPole-v1 (RLlib 2.60's defaults: model_size "XS", training_ratio 1024)."""
    return (
        DreamerV3Config()
        .environment("CartPole-v1")
        .training(model_size="XS", training_ratio=1024)
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=450.0, help="stop at this mean episode return")
    parser.add_argument(
        "--stop-timesteps", type=int, default=100_000, help="... or after this many env steps"
    )
    parser.add_argument("--stop-iters", type=int, default=10_000, help="... or after this many iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = build_config()
    if args.smoke:
        config.training(model_size="nano", batch_size_B=2, batch_length_T=8, horizon_H=4, training_ratio=16)
        config.reporting(min_sample_timesteps_per_iteration=20)
        args.stop_iters = 1

    algo = config.build_algo()
    for _ in range(args.stop_iters):
        result = algo.train()
        ret = result["env_runners"].get("episode_return_mean", float("nan"))
        steps = result["num_env_steps_sampled_lifetime"]
        ratio = result.get("actual_training_ratio", 0.0)
        print(
            f"iteration {result['training_iteration']}: mean return {ret:.1f} after {steps} env steps "
            f"(replay ratio {ratio:.0f})"
        )
        if ret >= args.stop_reward or steps >= args.stop_timesteps:
            break
    algo.stop()
    return result


if __name__ == "__main__":
    main()
