"""Rainbow-style DQN on Atari Pong from pixels: 4 stacked uint8 frames, each stored once in replay.

    python examples/dqn_atari.py --run-dir runs/dqn_pong     # long: millions of env steps
    python examples/dqn_atari.py --env ale_py:ALE/Breakout-v5
    python examples/dqn_atari.py --smoke                     # one tiny iteration (CI)

Needs the `ale` extra. RLlib's Atari DQN settings (its `examples/algorithms/dqn/atari_dqn.py`):
3-step returns, 51-atom distributional Q, double Q, dueling heads, prioritized replay of 1M
transitions (alpha 0.5, beta 0.4), a hard target update every 32,000 env steps, one update of 32
per 4 env steps after 80,000 steps of warm-up, clipped rewards. flywheel has no noisy nets, so
exploration is epsilon-greedy (1.0 to 0.01 over the first 250,000 env steps); its env is
DeepMind's 84x84 preprocessing (RLlib's example uses its own 64x64 wrappers).

The buffer stores each 84x84 frame once (7,056 bytes) and stacks the last 4 when it samples a batch:
about 7.1 KB per stored transition, 7.1 GB for the 1M of this config (docs/concepts/pixels.md).
"""

from __future__ import annotations

import argparse
import contextlib

from flywheel import DQNConfig
from flywheel.reporting import default_writers, train_with_progress


def build_config(env: str = "ale_py:ALE/Pong-v5", seed: int = 0) -> DQNConfig:
    """The Rainbow-style DQN config for an Atari id."""
    return (
        DQNConfig()
        .environment(
            env,
            env_config={"frameskip": 1, "repeat_action_probability": 0.0, "full_action_space": False},
            clip_rewards=True,
        )
        .env_runners(rollout_fragment_length=4)  # one update per 4 env steps
        .training(
            lr=6.25e-5,
            train_batch_size=32,
            n_step=3,
            num_atoms=51,
            v_min=-10.0,
            v_max=10.0,
            double_q=True,
            dueling=True,
            tau=1.0,
            target_network_update_freq=32_000,
            epsilon=[[0, 1.0], [250_000, 0.01]],
            num_steps_sampled_before_learning_starts=80_000,
            replay_buffer_config={
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": 1_000_000,
                "alpha": 0.5,
                "beta": 0.4,
            },
        )
        .rl_module(model_config={"head_fcnet_hiddens": [256]})  # RLlib's 84x84 CNN, then 256 units
        .debugging(seed=seed)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="ale_py:ALE/Pong-v5", help="an ALE id")
    parser.add_argument("--stop-timesteps", type=int, default=10_000_000)
    parser.add_argument("--stop-reward", type=float, default=18.0, help="Pong's usual target")
    parser.add_argument("--run-dir", default=None, help="write result files here")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)
    config = build_config(args.env)
    if args.smoke:
        config.training(
            num_steps_sampled_before_learning_starts=32,
            replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 1_000},
        ).reporting(min_sample_timesteps_per_iteration=48)
    algo = config.build_algo()
    writers = default_writers(args.run_dir) if args.run_dir else []
    with contextlib.ExitStack() as closing:
        for writer in writers:
            closing.enter_context(writer)
        result = train_with_progress(
            algo,
            stop_iters=1 if args.smoke else None,
            stop_timesteps=None if args.smoke else args.stop_timesteps,
            stop_reward=None if args.smoke else args.stop_reward,
            writers=writers,
            desc="DQN Atari",
        )
    algo.stop()
    ret = result["env_runners"].get("episode_return_mean", float("nan"))
    print(
        f"iteration {result['training_iteration']}: mean return {ret:.1f} "
        f"after {result['num_env_steps_sampled_lifetime']} env steps"
    )
    return result


if __name__ == "__main__":
    main()
