"""Save a trained PPO policy, then act with it from the checkpoint alone (no algorithm, no Ray).

    python examples/restore_for_inference.py                        # train, save, play 5 greedy episodes
    python examples/restore_for_inference.py --checkpoint runs/cartpole/checkpoint   # play a saved one
    python examples/restore_for_inference.py --export policy.pt     # also write a TorchScript module

`load_policy` puts the saved module between the saved connector pipelines, so the observation
filter below (a MeanStdFilter) normalizes with the statistics it had at save time.
"""

import argparse
import os
import tempfile

import gymnasium as gym
import numpy as np

from flywheel import PPOConfig
from flywheel.connectors.env_to_module import MeanStdFilter
from flywheel.inference import load_policy


def train_and_save(stop_iters: int, smoke: bool, folder: str) -> str:
    """Trains PPO on CartPole for `stop_iters` iterations, saves it in `folder` and returns the
    checkpoint directory."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_envs_per_env_runner=4, env_to_module_connector=lambda env, spaces, device: MeanStdFilter()
        )
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=1e-3,
            train_batch_size_per_learner=1000,
            minibatch_size=250,
            num_epochs=6,
        )
        .training(vf_clip_param=float("inf"))  # RLlib's 10 clamps 87-97% of the value errors here
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .debugging(seed=0)
    )
    if smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
    algo = config.build_algo()
    for _ in range(stop_iters):
        result = algo.train()
    print(
        f"iteration {result['training_iteration']}: mean return {result['env_runners']['episode_return_mean']:.1f}"
    )
    path = algo.save_to_path(os.path.join(folder, "checkpoint"))
    algo.stop()
    print(f"checkpoint: {path}")
    return path


def play(path: str, episodes: int) -> list[float]:
    """Greedy episodes of the checkpoint's policy in a fresh CartPole env; returns their returns."""
    policy = load_policy(path)
    env = gym.make("CartPole-v1")
    returns = []
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy.compute_single_action(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    print(f"greedy returns of the saved policy: {returns} (mean {np.mean(returns):.1f})")
    return returns


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="play this algorithm checkpoint instead of training one")
    parser.add_argument("--stop-iters", type=int, default=10, help="training iterations before saving")
    parser.add_argument("--episodes", type=int, default=5, help="greedy episodes to play")
    parser.add_argument("--export", help="also save the module's inference pass as TorchScript here")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.stop_iters, args.episodes = 1, 1

    with tempfile.TemporaryDirectory(
        prefix="cartpole_"
    ) as folder:  # a checkpoint trained here is deleted at the end
        path = args.checkpoint or train_and_save(args.stop_iters, args.smoke, folder)
        returns = play(path, args.episodes)
        if args.export:
            print(f"TorchScript: {load_policy(path).export_torchscript(args.export)}")
    return returns


if __name__ == "__main__":
    main()
