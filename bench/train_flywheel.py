"""flywheel PPO on CartPole-v1 until the last 100 finished episodes average 450 (and 475).

Our own config (API.md section 2), modelled on rl-zoo's tuned CartPole settings that SB3 runs:
8 envs, GAE lambda 0.8, gamma 0.98, no entropy bonus, lr 1e-3 decaying over 100k steps,
separate 64-64 tanh policy and value networks, and the same 20 gradient steps of 256 samples per
256 env steps (batch 512, minibatch 256, 20 epochs), everything in this process
(`num_env_runners=0`). `vf_clip_param` is lifted: like RLlib's, it clamps the squared value error,
and CartPole's returns (up to 50 at gamma 0.98) make early errors far larger than the default 10,
which zeroes the value gradient (seed 0 then needs ~670k steps to 450 instead of ~65k).
Finished episodes are collected from `on_sample_end`, as for RLlib. Prints one JSON line
(see README.md), or one with "error" if flywheel cannot run it.
"""

from benchlib import EpisodeReturnTracker, ThresholdClock, run_guarded, since_start, training_args


def main() -> None:
    args = training_args(__doc__)

    def body() -> dict:
        from flywheel import PPOConfig

        tracker = EpisodeReturnTracker()
        clock = ThresholdClock(tracker)
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=8)
            .training(
                lr=[[0, 1e-3], [100_000, 1e-4]],
                gamma=0.98,
                lambda_=0.8,
                entropy_coeff=0.0,
                train_batch_size_per_learner=512,
                minibatch_size=256,
                num_epochs=20,
                vf_clip_param=1000.0,
            )
            .rl_module(
                model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh", "vf_share_layers": False}
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

    run_guarded({"bench": "train", "framework": "flywheel", "seed": args.seed}, body)


if __name__ == "__main__":
    main()
