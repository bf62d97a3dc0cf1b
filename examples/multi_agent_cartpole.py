"""Two CartPoles as one multi-agent env, one PPO policy per agent (or one shared policy).

    python examples/multi_agent_cartpole.py                 # two policies, until each returns 400
    python examples/multi_agent_cartpole.py --shared        # one policy for both agents

Each agent ("agent_0", "agent_1") balances its own pole; `policy_mapping_fn` decides which
module acts for which agent. Results report each module's and each agent's mean episode return.
"""

import argparse

from flywheel import PPOConfig
from flywheel.testing import MultiCartPole


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--stop-reward", type=float, default=400.0, help="stop when every module returns this"
    )
    parser.add_argument(
        "--stop-timesteps", type=int, default=200_000, help="... or after this many env steps"
    )
    parser.add_argument(
        "--shared", action="store_true", help="one module for both agents (parameter sharing)"
    )
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    if args.shared:
        policies, mapping = {"shared"}, lambda agent_id, episode, **kw: "shared"
    else:
        policies, mapping = {"p0", "p1"}, lambda agent_id, episode, **kw: "p" + agent_id[-1]
    config = (
        PPOConfig()
        .environment(MultiCartPole, env_config={"num_agents": 2})
        .multi_agent(policies=policies, policy_mapping_fn=mapping)
        .env_runners(num_envs_per_env_runner=8)
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            gamma=0.98,
            lambda_=0.8,
            lr=[[0, 1e-3], [100_000, 1e-4]],
            train_batch_size_per_learner=1024,
            minibatch_size=128,
            num_epochs=10,
            vf_clip_param=float("inf"),
            vf_loss_coeff=0.5,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=0)
    )
    if args.smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)

    algo = config.build_algo()
    while True:
        result = algo.train()
        env_runners = result["env_runners"]
        per_module = env_runners.get("module_episode_returns_mean", {})
        modules = ", ".join(f"{mid} {ret:.1f}" for mid, ret in sorted(per_module.items()))
        print(
            f"iteration {result['training_iteration']}: mean return {env_runners['episode_return_mean']:.1f} "
            f"({modules}) after {env_runners['num_env_steps_sampled_lifetime']} env steps"
        )
        done = per_module and min(per_module.values()) >= args.stop_reward
        if args.smoke or done or env_runners["num_env_steps_sampled_lifetime"] >= args.stop_timesteps:
            break
    algo.stop()
    return result


if __name__ == "__main__":
    main()
