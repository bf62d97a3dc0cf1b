"""PPO on Pendulum-v1 (continuous actions) with observations normalized by a `MeanStdFilter`.

    python examples/ppo_pendulum.py                 # until the mean return reaches -250
    python examples/ppo_pendulum.py --stop-iters 5

The filter runs on the env runners as a custom env-to-module piece: each observation becomes
(obs - running mean) / running std before the module sees it (and is stored like that in the
episodes, so the learner trains on the same numbers). Its statistics are part of the runners' state
and of checkpoints.
"""

import argparse

from flywheel import PPOConfig
from flywheel.connectors.env_to_module import MeanStdFilter


def build_config() -> PPOConfig:
    """PPO for Pendulum-v1 with a MeanStdFilter in front of the module."""
    return (
        PPOConfig()
        .environment("Pendulum-v1")
        .env_runners(
            num_envs_per_env_runner=16,
            # Called once per runner with the env, its spaces and the device; returns the piece.
            env_to_module_connector=lambda env, spaces, device: MeanStdFilter(),
        )
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lr=1e-3,
            gamma=0.95,  # Pendulum rewards are dense: a short horizon learns faster.
            lambda_=0.95,
            train_batch_size_per_learner=3200,
            minibatch_size=256,
            num_epochs=10,
            vf_loss_coeff=0.5,
            vf_clip_param=1e4,  # returns are in the hundreds: don't clip the squared value error at 10
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "relu"})
        .debugging(seed=0)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=-250.0, help="stop at this mean episode return")
    parser.add_argument(
        "--stop-timesteps", type=int, default=400_000, help="... or after this many env steps"
    )
    parser.add_argument("--stop-iters", type=int, default=1_000, help="... or after this many iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = build_config()
    if args.smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        args.stop_iters = 1

    algo = config.build_algo()
    for _ in range(args.stop_iters):
        result = algo.train()
        # Absent until the first 200-step episode has finished.
        ret = result["env_runners"].get("episode_return_mean", float("nan"))
        steps = result["num_env_steps_sampled_lifetime"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f} after {steps} env steps")
        if ret >= args.stop_reward or steps >= args.stop_timesteps:
            break
    algo.stop()
    return result


if __name__ == "__main__":
    main()
