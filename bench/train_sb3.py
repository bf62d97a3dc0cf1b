"""Stable-Baselines3 PPO on CartPole-v1 until the last 100 finished episodes average 450 (and 475).

rl-zoo's tuned CartPole-v1 settings (shared/BENCHMARKS.md): 8 envs, n_steps=32, batch_size=256,
gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0, learning rate 1e-3 and clip range 0.2 both
decaying linearly over rl-zoo's 100k-step budget. Prints one JSON line (see README.md).
"""

from benchlib import EpisodeReturnTracker, ThresholdClock, run_guarded, since_start, training_args

ZOO_TIMESTEPS = 100_000


def main() -> None:
    args = training_args(__doc__)

    def body() -> dict:
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.env_util import make_vec_env

        tracker = EpisodeReturnTracker()
        clock = ThresholdClock(tracker)

        class Stopper(BaseCallback):
            """Feeds Monitor's finished-episode returns to the tracker; checks once per rollout."""

            def __init__(self) -> None:
                super().__init__()
                self.done = False

            def _on_step(self) -> bool:
                for info in self.locals["infos"]:
                    if "episode" in info:
                        tracker.add_finished(float(info["episode"]["r"]))
                return not self.done

            def _on_rollout_end(self) -> None:
                self.done = clock.check(self.num_timesteps) or since_start() >= args.max_seconds

        env = make_vec_env("CartPole-v1", n_envs=8, seed=args.seed)
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=lambda progress_remaining: progress_remaining * 1e-3,
            clip_range=lambda progress_remaining: progress_remaining * 0.2,
            seed=args.seed,
            device="cpu",
        )
        clock.start_training()
        model.learn(total_timesteps=ZOO_TIMESTEPS, callback=Stopper())
        return clock.result(model.num_timesteps)

    run_guarded({"bench": "train", "framework": "sb3", "seed": args.seed}, body)


if __name__ == "__main__":
    main()
