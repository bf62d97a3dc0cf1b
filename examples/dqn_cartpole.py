"""DQN on CartPole-v1 with the Rainbow options double Q, dueling heads and 3-step returns.

    python examples/dqn_cartpole.py                    # until the mean return reaches 450
    python examples/dqn_cartpole.py --prioritized      # with prioritized replay
    python examples/dqn_cartpole.py --stop-iters 5

Each training step samples 4 env steps into the replay buffer and, once 1,000 steps are in, takes
one gradient step on 128 replayed transitions (training_intensity=32: 32 replayed env steps
per sampled one). Exploration is epsilon-greedy, with epsilon decaying from 1.0 to 0.02 over the
first 10,000 steps.
"""

import argparse

from flywheel import DQNConfig


def build_config(prioritized: bool = False) -> DQNConfig:
    """DQN for CartPole-v1 (a mean return of 450 in 57,000-67,000 env steps with seeds 0-2)."""
    # The whole run fits: early failures stay in the buffer, which keeps the Q-values honest.
    replay = {
        "type": "PrioritizedEpisodeReplayBuffer" if prioritized else "EpisodeReplayBuffer",
        "capacity": 100_000,
    }
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .training(
            lr=[[0, 1e-3], [100_000, 2e-4]],  # decays over sampled env steps
            train_batch_size_per_learner=128,  # one update of 128 per 4 sampled env steps
            training_intensity=32,  # replayed env steps per sampled env step
            n_step=3,  # bootstrap after 3 real rewards (gamma**3 on the bootstrap)
            double_q=True,
            dueling=True,
            epsilon=[[0, 1.0], [10_000, 0.02]],
            target_network_update_freq=500,  # sampled env steps between target-network copies
            replay_buffer_config=replay,
        )
        # Encoder [128] relu, then advantage and value heads [128] (DQN's default is 256 wide).
        .rl_module(model_config={"fcnet_hiddens": [128], "head_fcnet_hiddens": [128]})
        .debugging(seed=0)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=450.0, help="stop at this mean episode return")
    parser.add_argument(
        "--stop-timesteps", type=int, default=150_000, help="... or after this many env steps"
    )
    parser.add_argument("--stop-iters", type=int, default=1_000, help="... or after this many iterations")
    parser.add_argument("--prioritized", action="store_true", help="prioritized replay (alpha 0.6, beta 0.4)")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = build_config(args.prioritized)
    if args.smoke:
        config.training(num_steps_sampled_before_learning_starts=64).reporting(
            min_sample_timesteps_per_iteration=128
        )
        args.stop_iters = 1

    algo = config.build_algo()
    for _ in range(args.stop_iters):
        result = algo.train()  # 1,000 env steps (250 training steps, 250 updates) per iteration
        ret = result["env_runners"].get("episode_return_mean", float("nan"))
        steps = result["num_env_steps_sampled_lifetime"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f} after {steps} env steps")
        if ret >= args.stop_reward or steps >= args.stop_timesteps:
            break
    algo.stop()
    return result


if __name__ == "__main__":
    main()
