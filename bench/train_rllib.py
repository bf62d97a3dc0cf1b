"""RLlib 2.60 PPO on CartPole-v1 until the last 100 finished episodes average 450 (and 475).

Settings from RLlib's own CartPole example (shared/BENCHMARKS.md): lr=3e-4, num_epochs=6,
vf_loss_coeff=0.01, a linear 32-unit network with shared value layers, train batch 4000,
everything local (`num_env_runners=0`). The stop criterion is ours (the same for every peer):
finished episodes are collected from `on_sample_end`, not RLlib's `episode_return_mean`.
Prints one JSON line (see README.md for the fields).
"""

from benchlib import EpisodeReturnTracker, ThresholdClock, run_guarded, since_start, training_args


def main() -> None:
    args = training_args(__doc__)

    def body() -> dict:
        from ray.rllib.algorithms.ppo import PPOConfig

        tracker = EpisodeReturnTracker()
        clock = ThresholdClock(tracker)
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0)
            .training(lr=3e-4, num_epochs=6, vf_loss_coeff=0.01)
            .rl_module(
                model_config={"fcnet_hiddens": [32], "fcnet_activation": "linear", "vf_share_layers": True}
            )
            .callbacks(on_sample_end=lambda *, samples, **kw: tracker.add_chunks(samples))
            .debugging(seed=args.seed)
        )
        algo = config.build_algo()
        clock.start_training()
        steps = 0
        while since_start() < args.max_seconds:
            steps = algo.train()["env_runners"]["num_env_steps_sampled_lifetime"]
            if clock.check(steps):
                break
        algo.stop()
        return clock.result(steps)

    run_guarded({"bench": "train", "framework": "rllib", "seed": args.seed}, body)


if __name__ == "__main__":
    main()
