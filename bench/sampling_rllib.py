"""RLlib 2.60 sampling speed: the local SingleAgentEnvRunner of a PPO algorithm on CartPole-v1.

As in shared/BENCHMARKS.md: `num_env_runners=0`, `num_envs_per_env_runner=N`, the default
PPO module (2x256 tanh), `sample(num_timesteps=4000, explore=True)` timed after a warm-up.
Prints one JSON line: env steps per second.
"""

from benchlib import run_guarded, sampling_args, time_sampling_args


def main() -> None:
    args = sampling_args(__doc__)

    def body() -> dict:
        from ray.rllib.algorithms.ppo import PPOConfig

        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=args.num_envs)
            .debugging(seed=args.seed)
        )
        algo = config.build_algo()
        runner = algo.env_runner

        def sample(n: int) -> int:
            return sum(len(e) for e in runner.sample(num_timesteps=n, explore=True))

        result = time_sampling_args(sample, args)
        algo.stop()
        return result

    run_guarded({"bench": "sampling", "framework": "rllib", "num_envs": args.num_envs}, body)


if __name__ == "__main__":
    main()
