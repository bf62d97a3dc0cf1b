"""APPO on CartPole-v1: two remote runners that never wait for the learner (asynchronous sampling).

    python examples/appo_cartpole.py                      # to a mean return of 450 (about 30 s)
    python examples/appo_cartpole.py --num-env-runners 0  # the same, sampling and learning in turn

Each runner always has a `sample()` in flight; the learner (in this process) trains on whatever
arrived, each train batch up to 4 times from APPO's circular buffer, and the runners take the newest
weights with their next `sample()`. `weights_lag` tells how many updates behind the learner the
weights that sampled a train batch were; V-trace and the target policy correct for it.
"""

import argparse

from flywheel import APPOConfig


def build_config(num_env_runners: int = 2) -> APPOConfig:
    # RLlib's tuned CartPole settings for APPO, with a smaller network, lr 1e-3 and more gradient
    # steps per sampled step (4 passes over each train batch, minibatches of 250 env steps).
    return (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
        .training(
            lr=1e-3,
            entropy_coeff=0.0,
            vf_loss_coeff=0.05,
            circular_buffer_iterations_per_batch=4,
            minibatch_size=250,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": True})
        .reporting(min_time_s_per_iteration=2)
        .debugging(seed=0)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--stop-reward", type=float, default=450.0)
    parser.add_argument("--stop-timesteps", type=int, default=300_000)
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)
    config = build_config(args.num_env_runners)
    if args.smoke:
        config.training(train_batch_size_per_learner=100, minibatch_size=None).reporting(
            min_time_s_per_iteration=0
        )
        config.env_runners(num_cpus_per_env_runner=0, rollout_fragment_length=25)
        args.stop_timesteps = 1
    algo = config.build_algo()
    try:
        while True:
            result = algo.train()
            runners, learners = result["env_runners"], result["learners"]["__all_modules__"]
            print(
                f"iteration {result['training_iteration']}: mean return {runners['episode_return_mean']:.1f} "
                f"after {result['num_env_steps_sampled_lifetime']} env steps "
                f"({runners.get('num_env_steps_sampled_lifetime_throughput', 0.0):.0f} sampled/s, weights lag "
                f"{learners['weights_lag_mean']:.1f} updates on average, {learners['weights_lag_max']:.0f} at most)"
            )
            done = result["num_env_steps_sampled_lifetime"] >= args.stop_timesteps
            if runners["episode_return_mean"] >= args.stop_reward or done:
                break
    finally:
        algo.stop()
    return result


if __name__ == "__main__":
    main()
