"""flywheel multi-agent sampling speed: MultiAgentEnvRunner on two CartPoles, timed like the RLlib peer.

`MultiAgentEnvRunner` on `flywheel.testing.MultiCartPole` (two independent CartPole-v1 envs as one
`MultiAgentEnv`), one default PPO module per agent (`policies={"p0", "p1"}`), `num_envs_per_env_runner=N`,
`sample(num_timesteps=4000, explore=True)` timed after a warm-up (API.md sections 6-7), alone or in turns with
the RLlib peer (--turns-dir). Prints one JSON line: env steps per second, or an "error" if it fails.
"""

from benchlib import run_guarded, sampling_args, time_sampling_args


def main() -> None:
    args = sampling_args(__doc__)

    def body() -> dict:
        from flywheel import MultiAgentEnvRunner, PPOConfig
        from flywheel.testing import MultiCartPole

        config = (
            PPOConfig()
            .environment(MultiCartPole, env_config={"num_agents": 2})
            .multi_agent(
                policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p" + agent_id[-1]
            )
            .env_runners(num_envs_per_env_runner=args.num_envs)
            .debugging(seed=args.seed)
        )
        runner = MultiAgentEnvRunner(config=config)

        def sample(n: int) -> int:
            return sum(len(e) for e in runner.sample(num_timesteps=n, explore=True))

        result = time_sampling_args(sample, args)
        runner.stop()
        return result

    run_guarded({"bench": "sampling_ma", "framework": "flywheel", "num_envs": args.num_envs}, body)


if __name__ == "__main__":
    main()
