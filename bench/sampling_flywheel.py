"""flywheel sampling speed: SingleAgentEnvRunner on CartPole-v1, timed like the RLlib peer.

`SingleAgentEnvRunner(config=PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=N))`
with the default PPO module, `sample(num_timesteps=4000, explore=True)` timed after a warm-up
(API.md section 6), alone or in turns with the single-file loop (--turns-dir). Prints one JSON line: env steps per second, or an "error" if it fails.
"""

from benchlib import run_guarded, sampling_args, time_sampling_args


def main() -> None:
    args = sampling_args(__doc__)

    def body() -> dict:
        from flywheel import PPOConfig, SingleAgentEnvRunner

        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_envs_per_env_runner=args.num_envs)
            .debugging(seed=args.seed)
        )
        runner = SingleAgentEnvRunner(config=config)

        def sample(n: int) -> int:
            return sum(len(e) for e in runner.sample(num_timesteps=n, explore=True))

        result = time_sampling_args(sample, args)
        runner.stop()
        return result

    run_guarded({"bench": "sampling", "framework": "flywheel", "num_envs": args.num_envs}, body)


if __name__ == "__main__":
    main()
