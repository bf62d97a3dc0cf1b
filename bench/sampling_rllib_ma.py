"""RLlib 2.60 multi-agent sampling speed: the local MultiAgentEnvRunner of a PPO algorithm on two CartPoles.

As in shared/BENCHMARKS.md: RLlib's own `MultiAgentCartPole` (two CartPole-v1 envs, agents 0 and 1),
one default PPO module per agent, `num_env_runners=0`, `num_envs_per_env_runner=N`,
`sample(num_timesteps=4000, explore=True)` timed after a warm-up, alone or in turns with the
flywheel peer (--turns-dir). Prints one JSON line: env steps per second.
"""

from benchlib import run_guarded, sampling_args, time_sampling_args


def main() -> None:
    args = sampling_args(__doc__)

    def body() -> dict:
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.examples.envs.classes.multi_agent import MultiAgentCartPole

        config = (
            PPOConfig()
            .environment(MultiAgentCartPole, env_config={"num_agents": 2})
            .multi_agent(
                policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}"
            )
            .env_runners(num_env_runners=0, num_envs_per_env_runner=args.num_envs)
            .debugging(seed=args.seed)
        )
        algo = config.build_algo()
        runner = algo.env_runner

        def sample(n: int) -> int:
            return sum(e.env_steps() for e in runner.sample(num_timesteps=n, explore=True))

        result = time_sampling_args(sample, args)
        algo.stop()
        return result

    run_guarded({"bench": "sampling_ma", "framework": "rllib", "num_envs": args.num_envs}, body)


if __name__ == "__main__":
    main()
