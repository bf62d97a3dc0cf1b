"""Offline RL: record a PPO CartPole policy to Parquet files, then clone it with BC.

    python examples/offline_bc_cartpole.py            # PPO to a mean return of 475, 100 episodes, BC
    python examples/offline_bc_cartpole.py --smoke    # one tiny iteration of each

PPO trains until its mean return reaches 475; a runner with `offline_data(output=...)` then records
100 of its episodes (one row per step). BC reads them back with pyarrow and evaluates greedily on
the env after every iteration (tests/offline: >= 475 within 20 iterations).
"""

import argparse
import tempfile

from flywheel import BCConfig, PPOConfig, SingleAgentEnvRunner


def train_expert(smoke: bool, target: float = 475.0) -> tuple[PPOConfig, dict]:
    """A PPO config and the inference weights of its policy trained to a mean return of `target`
    (seed 1: 490 after ~65k env steps)."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=8)
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            gamma=0.98,
            lambda_=0.8,
            lr=[[0, 1e-3], [100_000, 1e-4]],
            minibatch_size=128,
            num_epochs=10,
            train_batch_size_per_learner=256 if smoke else 1024,
            vf_clip_param=float("inf"),
            vf_loss_coeff=0.5,
        )  # fmt: skip
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=1)
    )
    algo = config.build_algo()
    while True:
        result = algo.train()
        if smoke or result["env_runners"]["episode_return_mean"] >= target:
            break
        if result["num_env_steps_sampled_lifetime"] >= 200_000:
            raise RuntimeError(f"PPO did not reach a mean return of {target} within 200,000 env steps")
    weights = algo.get_module().get_state(inference_only=True)
    algo.stop()
    return config, weights


def record(config: PPOConfig, weights: dict | None, folder: str, num_episodes: int) -> float:
    """Records `num_episodes` episodes of the policy (random actions when `weights` is None) to
    `folder`, one row per step; returns their mean return."""
    runner = SingleAgentEnvRunner(
        config=config.copy().offline_data(output=folder, output_write_episodes=False)
    )
    if weights is not None:
        runner.set_state({"rl_module": weights, "weights_seq_no": 0})
    episodes = runner.sample(num_episodes=num_episodes, random_actions=weights is None)
    runner.stop()  # writes what is still buffered
    return sum(e.get_return() for e in episodes) / len(episodes)


def clone(folder: str, args: argparse.Namespace) -> dict:
    """Records the expert's episodes to `folder`, then trains BC on them; returns BC's last result."""
    ppo_config, weights = train_expert(args.smoke)
    num_episodes = 2 if args.smoke else args.episodes
    print(
        f"recorded {num_episodes} episodes (mean return {record(ppo_config, weights, folder, num_episodes):.1f}) to {folder}"
    )

    config = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=folder, input_read_episodes=False)
        .training(lr=1e-3, train_batch_size_per_learner=2000, minibatch_size=250)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=1 if args.smoke else 10,
            evaluation_config={"explore": False},
        )  # fmt: skip
        .debugging(seed=0)
    )
    algo = config.build_algo()
    for _ in range(1 if args.smoke else args.stop_iters):
        result = algo.train()
        ret = result["evaluation"]["env_runners"]["episode_return_mean"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f} (greedy evaluation)")
    algo.stop()
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100, help="expert episodes to record")
    parser.add_argument("--stop-iters", type=int, default=20, help="BC iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration of each (for CI)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="cartpole-expert-") as folder:  # deleted at the end
        return clone(folder, args)


if __name__ == "__main__":
    main()
