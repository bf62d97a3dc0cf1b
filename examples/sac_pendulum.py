"""SAC on Pendulum-v1 (continuous actions): twin critics, automatic entropy tuning.

    python examples/sac_pendulum.py                 # until the mean return reaches -250
    python examples/sac_pendulum.py --stop-iters 5

Every env step goes into the replay buffer and is followed by one gradient step on 256 replayed
transitions (the default: one update per training step, one env step per training step). The
policy acts in [-1, 1]; runners unsquash its actions to Pendulum's torque range [-2, 2].
"""

import argparse

from flywheel import SACConfig


def build_config() -> SACConfig:
    """SAC for Pendulum-v1 (seed 0 reaches -250 over the last 10 episodes in about 5,000 env steps)."""
    return (
        SACConfig()
        .environment("Pendulum-v1")
        .training(
            actor_lr=1e-3,
            critic_lr=1e-3,
            alpha_lr=1e-3,
            train_batch_size_per_learner=256,
            num_steps_sampled_before_learning_starts=1000,
            tau=0.005,  # the target critics follow slowly, after every gradient step
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        # Pendulum episodes are 200 steps: report the mean return of the last 10 of them.
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
        result = algo.train()  # 1,000 env steps (and as many gradient steps) per iteration
        # Absent until the first 200-step episode has finished.
        ret = result["env_runners"].get("episode_return_mean", float("nan"))
        steps = result["num_env_steps_sampled_lifetime"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f} after {steps} env steps")
        if ret >= args.stop_reward or steps >= args.stop_timesteps:
            break
    algo.stop()
    return result


if __name__ == "__main__":
    main()
