"""A grid search over PPO's learning rate on CartPole-v1 with Ray Tune; the best trial's checkpoint
then plays greedy episodes.

    python examples/tune_ppo_cartpole.py                      # 3 trials on this machine
    python examples/tune_ppo_cartpole.py --address auto       # ... or on a running Ray cluster

Each trial is one PPO (`flywheel.tune.trainable("PPO")`) that stops at the target return or after
`--stop-iters` iterations and saves a flywheel checkpoint at the end. Trials run side by side as far
as the CPUs allow: each asks for 1 CPU for its main process plus one per remote env runner
(`--num-env-runners`). The best trial's checkpoint is loaded with `load_policy`, without Ray.
"""

import argparse
import tempfile

import gymnasium as gym
import numpy as np
from ray import tune

import flywheel.tune
from flywheel import PPOConfig
from flywheel.inference import load_policy

RETURN = "env_runners/episode_return_mean"


def build_config(lrs: list[float], num_env_runners: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=4)
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=tune.grid_search(lrs),
            train_batch_size_per_learner=1000,
            minibatch_size=250,
            num_epochs=6,
        )
        .training(vf_clip_param=float("inf"))  # RLlib's 10 clamps 88% of the value errors (lr 1e-4)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .debugging(seed=0)
    )


def greedy_returns(path: str, episodes: int) -> list[float]:
    """Returns of `episodes` greedy CartPole episodes of the checkpoint's policy, played side by side in a
    vector env with one batched policy call per step."""
    policy = load_policy(path)
    envs = gym.make_vec("CartPole-v1", num_envs=episodes)
    obs, _ = envs.reset(seed=0)
    returns, done = np.zeros(episodes), np.zeros(episodes, dtype=bool)
    while not done.all():
        obs, rewards, terminated, truncated, _ = envs.step(policy.compute_actions(obs))
        returns += rewards * ~done  # finished episodes' envs reset and play on: not counted
        done |= terminated | truncated
    envs.close()
    return returns.tolist()


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None, help="join this Ray cluster (e.g. 'auto')")
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 3e-4, 1e-4], help="the grid")
    parser.add_argument("--num-env-runners", type=int, default=0, help="remote runners per trial")
    parser.add_argument("--stop-reward", type=float, default=400.0)
    parser.add_argument("--stop-iters", type=int, default=30)
    parser.add_argument("--episodes", type=int, default=5, help="greedy episodes of the best policy")
    parser.add_argument("--storage-path", default=None, help="where Tune writes (default: ~/ray_results)")
    parser.add_argument(
        "--smoke", action="store_true", help="two tiny trials of one iteration (what CI runs)"
    )
    args = parser.parse_args(argv)
    if args.address is not None:
        import ray

        ray.init(address=args.address)
    if args.smoke and args.storage_path is None:
        with tempfile.TemporaryDirectory(prefix="tune_ppo_cartpole_") as storage:  # deleted at the end
            return tune_and_play(args, storage)
    return tune_and_play(args, args.storage_path)


def tune_and_play(args: argparse.Namespace, storage_path: str | None) -> list[float]:
    """Runs the grid search (results under `storage_path`), then plays the best trial's checkpoint."""
    config = build_config(args.lrs, args.num_env_runners)
    if args.smoke:
        config.training(
            lr=tune.grid_search(args.lrs[:2]), train_batch_size_per_learner=200, minibatch_size=100
        )
        config.training(num_epochs=1)
        args.stop_iters, args.episodes = 1, 1

    tuner = tune.Tuner(
        flywheel.tune.trainable("PPO"),
        param_space=config,
        tune_config=tune.TuneConfig(metric=RETURN, mode="max"),
        run_config=tune.RunConfig(
            storage_path=storage_path,
            stop={RETURN: args.stop_reward, "training_iteration": args.stop_iters},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
            verbose=0 if args.smoke else 1,
        ),
    )
    results = tuner.fit()
    for result in sorted(results, key=lambda r: -r.config["lr"]):
        metrics = result.metrics
        print(
            f"iteration {metrics['training_iteration']}: mean return "
            f"{metrics['env_runners']['episode_return_mean']:.1f} (lr={result.config['lr']:g})"
        )
    best = results.get_best_result()
    print(f"best: lr={best.config['lr']:g}, checkpoint {best.checkpoint.path}")
    returns = greedy_returns(best.checkpoint.path, args.episodes)
    print(f"greedy returns of the best policy: {returns} (mean {np.mean(returns):.1f})")
    return returns


if __name__ == "__main__":
    main()
