"""RLlib 2.60 PPO on CartPole-v1 with `num_env_runners` remote runners: `train()` env steps per second.

RLlib's own CartPole example settings (lr 3e-4, 6 epochs, vf_loss_coeff 0.01, a linear 32-unit
network with shared value layers, train batch 4000, minibatch 128, one sub-env per runner), the
same as `train_flywheel_remote.py`. One warm-up iteration, then timed ones until at least `--iters`
calls and `--min-seconds` passed. Prints one JSON line.
"""

from benchlib import run_guarded, since_start
from train_flywheel_remote import remote_args, timed_train


def main() -> None:
    args = remote_args(__doc__)

    def body() -> dict:
        from ray.rllib.algorithms.ppo import PPOConfig

        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=args.num_env_runners, num_envs_per_env_runner=1)
            .training(
                lr=3e-4,
                train_batch_size_per_learner=4000,
                minibatch_size=128,
                num_epochs=6,
                vf_loss_coeff=0.01,
            )
            .rl_module(
                model_config={"fcnet_hiddens": [32], "fcnet_activation": "linear", "vf_share_layers": True}
            )
            .debugging(seed=args.seed)
        )
        algo = config.build_algo()
        startup_s = since_start()
        first = algo.train()["env_runners"]["num_env_steps_sampled_lifetime"]
        last, iters, elapsed = timed_train(
            lambda: algo.train()["env_runners"]["num_env_steps_sampled_lifetime"], args
        )
        algo.stop()
        return {
            "steps_per_s": round((last - first) / elapsed, 1),
            "timed_env_steps": int(last - first),
            "timed_s": round(elapsed, 2),
            "timed_iters": iters,
            "startup_s": round(startup_s, 1),
        }

    run_guarded(
        {"bench": "train_remote", "framework": "rllib", "num_env_runners": args.num_env_runners}, body
    )


if __name__ == "__main__":
    main()
