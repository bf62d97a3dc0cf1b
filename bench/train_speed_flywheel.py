"""flywheel PPO's `train()` speed at the single-file loop's own settings: env steps per second.

`PPOConfig` set as `train_loop.py` runs: 4 envs x 128 steps (train batch 512), 4 epochs x 4
minibatches of 128, lr 2.5e-4 annealed over 500k steps, gamma 0.99, GAE lambda 0.95, clip 0.2,
entropy 0.01, value coefficient 0.5, grad norm 0.5, separate 64-64 tanh policy and value networks,
everything in this process (`num_env_runners=0`). Timed like `train_speed_loop.py`: calls of
`--num-timesteps` env steps (whole `train()` iterations of 512), alone or in turns with it
(`--turns-dir`). `--num-envs` is ignored. Prints one JSON line.
"""

import math

from benchlib import run_guarded, sampling_args, time_sampling_args

NUM_ENVS, NUM_STEPS = 4, 128


def main() -> None:
    args = sampling_args(__doc__)

    def body() -> dict:
        from flywheel import PPOConfig

        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(
                num_env_runners=0, num_envs_per_env_runner=NUM_ENVS, rollout_fragment_length=NUM_STEPS
            )
            .training(
                lr=[[0, 2.5e-4], [500_000, 0.0]],
                gamma=0.99,
                lambda_=0.95,
                clip_param=0.2,
                entropy_coeff=0.01,
                vf_loss_coeff=0.5,
                grad_clip=0.5,
                train_batch_size_per_learner=NUM_ENVS * NUM_STEPS,
                minibatch_size=128,
                num_epochs=4,
            )
            .rl_module(
                model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh", "vf_share_layers": False}
            )
            .debugging(seed=args.seed)
        )
        algo = config.build_algo()
        key = "num_env_steps_sampled_lifetime"
        sampled = 0

        def train(n: int) -> int:
            nonlocal sampled
            before = sampled
            for _ in range(math.ceil(n / (NUM_ENVS * NUM_STEPS))):
                sampled = algo.train()["env_runners"][key]
            return sampled - before

        result = time_sampling_args(train, args)
        algo.stop()
        return result

    run_guarded({"bench": "train_speed", "framework": "flywheel"}, body)


if __name__ == "__main__":
    main()
