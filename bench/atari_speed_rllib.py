"""RLlib 2.60 PPO on Atari Pong: env steps per second of sampling and of training, side by side with
atari_speed_flywheel.py (same env, preprocessing, frame stacking connectors, CNN and settings; see there).

    bench/.venv/bin/python bench/atari_speed_rllib.py --mode sample --num-envs 8

RLlib's frames are float32 (`AtariPreprocessing(scale_obs=True)`), since its CNN encoder does not
take uint8. Prints one JSON line.
"""

from __future__ import annotations

from atari_speed_args import atari_args, atari_meta, time_algo
from benchlib import run_guarded


def main() -> None:
    args = atari_args(__doc__)

    def body() -> dict:
        import gymnasium as gym
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
        from ray.rllib.connectors.learner.frame_stacking import FrameStackingLearner
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
        from ray.tune.registry import register_env

        def pong(cfg):
            env = gym.make("ale_py:ALE/Pong-v5", **cfg)
            return gym.wrappers.AtariPreprocessing(
                env, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True, grayscale_newaxis=True,
                scale_obs=True,
            )  # fmt: skip

        register_env("pong", pong)
        config = (
            PPOConfig()
            .environment(
                "pong",
                env_config={"frameskip": 1, "repeat_action_probability": 0.0, "full_action_space": False},
            )
            .env_runners(
                num_env_runners=0,
                num_envs_per_env_runner=args.num_envs,
                env_to_module_connector=lambda env, spaces=None, device=None: FrameStackingEnvToModule(
                    num_frames=4
                ),
            )
            .training(
                learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=4),
                train_batch_size_per_learner=args.train_batch,
                minibatch_size=128,
                num_epochs=args.num_epochs,
            )
            .rl_module(
                model_config=DefaultModelConfig(
                    conv_filters=[[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]], vf_share_layers=True
                )
            )
            .debugging(seed=args.seed)
        )
        return time_algo(config.build_algo(), args)

    run_guarded(atari_meta(args, "rllib"), body)


if __name__ == "__main__":
    main()
