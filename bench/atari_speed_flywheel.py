"""flywheel PPO on Atari Pong: env steps per second of sampling and of training, for the side-by-side
run with RLlib 2.60 (atari_speed_rllib.py; `--turns-dir` alternates their timed turns).

Both: `ALE/Pong-v5` with frameskip 1, no sticky actions, minimal action set, in gymnasium's
`AtariPreprocessing` (4 frames a step, 84x84 grayscale, up to 30 no-ops), 4 frames stacked by
env-to-module and learner connector pieces, RLlib's default 84x84 CNN ([16, 8, 4], [32, 4, 2],
[256, 11, 1], relu) with value layers shared, no remote runners or learners, 8 sub-envs.
flywheel keeps uint8 frames end to end (its CNN scales them); RLlib's CNN needs float32 frames, so
its env scales them (`scale_obs=True`), as RLlib's own Atari wrapper does.

    .venv/bin/python bench/atari_speed_flywheel.py --mode sample --num-envs 8
    .venv/bin/python bench/atari_speed_flywheel.py --mode train

`--mode sample` times `runner.sample(num_timesteps=N, explore=True)`; `--mode train` times
`algo.train()` (train batch `--train-batch`, minibatch 128, `--num-epochs` epochs). Prints one JSON line.
"""

from __future__ import annotations

from atari_speed_args import atari_args, atari_meta, time_algo
from benchlib import run_guarded


def main() -> None:
    args = atari_args(__doc__)

    def body() -> dict:
        from flywheel import PPOConfig

        config = (
            PPOConfig()
            .environment(
                "ale_py:ALE/Pong-v5",
                env_config={"frameskip": 1, "repeat_action_probability": 0.0, "full_action_space": False},
            )
            .env_runners(num_env_runners=0, num_envs_per_env_runner=args.num_envs)
            .training(
                train_batch_size_per_learner=args.train_batch, minibatch_size=128, num_epochs=args.num_epochs
            )
            .rl_module(
                model_config={
                    "conv_filters": [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]],
                    "vf_share_layers": True,
                }
            )
            .debugging(seed=args.seed)
        )
        return time_algo(config.build_algo(), args)

    run_guarded(atari_meta(args, "flywheel"), body)


if __name__ == "__main__":
    main()
