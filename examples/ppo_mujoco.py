"""PPO on MuJoCo (HalfCheetah-v5, Hopper-v5, ...): CleanRL's `ppo_continuous_action` recipe as a config.

    pip install "flywheel[mujoco]"
    python examples/ppo_mujoco.py                              # HalfCheetah-v5, 1M env steps
    python examples/ppo_mujoco.py --env Hopper-v5 --seed 1
    python examples/ppo_mujoco.py --tuned                      # rl-zoo's tuned HalfCheetah settings

Every part of CleanRL's script is a setting: observations normalized and clipped to ±10 by a
`MeanStdFilter`, rewards scaled by the running std of the discounted return (`normalize_rewards`),
Gaussian actions clipped to the bounds (`normalize_actions`, the default), 64x64 tanh actor and
critic with orthogonal initialization (gain sqrt(2), 0.01 for the policy output, 1 for the value
output) and a state-independent log-std, Adam with eps 1e-5 and a learning rate annealed to 0,
advantages standardized per minibatch, PPO2's value clipping, gradients clipped at norm 0.5.
Reported returns are the env's raw returns. `bench/mujoco_flywheel.py` runs these configs.
"""

import argparse
import math

from flywheel import PPOConfig
from flywheel.connectors.env_to_module import MeanStdFilter

BUDGET = 1_000_000


def cleanrl_config(env: str = "HalfCheetah-v5", seed: int = 0, budget: int = BUDGET) -> PPOConfig:
    """CleanRL's ppo_continuous_action.py defaults, setting by setting."""
    return (
        PPOConfig()
        .environment(env)
        .env_runners(
            num_envs_per_env_runner=1,
            env_to_module_connector=lambda env, spaces, device: MeanStdFilter(clip=10.0),
            normalize_rewards=True,  # gamma 0.99, clipped to +-10
        )
        .training(
            use_kl_loss=False,
            lr=[[0, 3e-4], [budget, 0.0]],  # annealed linearly over the budget
            adam_epsilon=1e-5,
            gamma=0.99,
            lambda_=0.95,
            train_batch_size_per_learner=2048,
            minibatch_size=64,  # 32 minibatches
            num_epochs=10,
            clip_param=0.2,
            advantage_normalization="minibatch",
            vf_clip_range=0.2,  # CleanRL's clip_vloss
            vf_clip_param=float("inf"),  # no RLlib-style clamp of the squared error
            vf_loss_coeff=0.25,  # CleanRL's 0.5 * (V - R)^2 * vf_coef 0.5
            entropy_coeff=0.0,
            grad_clip=0.5,
            grad_clip_by="global_norm",
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": [64, 64],
                "fcnet_activation": "tanh",
                "vf_share_layers": False,
                "fcnet_kernel_initializer": "orthogonal_",
                "fcnet_kernel_initializer_kwargs": {"gain": math.sqrt(2)},
                "fcnet_bias_initializer": "zeros_",
                "head_fcnet_kernel_initializer": "orthogonal_",
                "head_fcnet_bias_initializer": "zeros_",
                "pi_output_kernel_initializer_kwargs": {"gain": 0.01},
                "vf_output_kernel_initializer_kwargs": {"gain": 1.0},
                "free_log_std": True,
                "log_std_init": 0.0,
            }
        )
        .debugging(seed=seed)
    )


def tuned_config(env: str = "HalfCheetah-v5", seed: int = 0, budget: int = BUDGET) -> PPOConfig:
    """rl-zoo's tuned PPO for HalfCheetah (normalized observations and rewards, 512-step batches of
    64 x 20 epochs, gamma 0.98, lambda 0.92, lr 2.06e-5, clip 0.1, 256x256 ReLU, log-std -2)."""
    return (
        cleanrl_config(env, seed, budget)
        .training(
            lr=2.0633e-05,
            gamma=0.98,
            lambda_=0.92,
            train_batch_size_per_learner=512,
            minibatch_size=64,
            num_epochs=20,
            clip_param=0.1,
            vf_clip_range=None,
            vf_loss_coeff=0.58096,
            entropy_coeff=0.000401762,
            grad_clip=0.8,
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": [256, 256],
                "fcnet_activation": "relu",
                "vf_share_layers": False,
                "free_log_std": True,
                "log_std_init": -2.0,
            }
        )
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stop-timesteps", type=int, default=BUDGET, help="env steps to train")
    parser.add_argument("--tuned", action="store_true", help="rl-zoo's tuned settings instead of CleanRL's")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration on Hopper-v5 (what CI runs)")
    args = parser.parse_args(argv)

    if args.smoke:
        args.env, args.stop_timesteps = "Hopper-v5", 256
    make = tuned_config if args.tuned else cleanrl_config
    config = make(args.env, args.seed, args.stop_timesteps)
    if args.smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)

    algo = config.build_algo()
    steps = 0
    while steps < args.stop_timesteps:
        result = algo.train()
        # The env's raw returns (rewards are normalized for learning only); absent until an episode ends.
        ret = result["env_runners"].get("episode_return_mean", float("nan"))
        steps = result["num_env_steps_sampled_lifetime"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f} after {steps} env steps")
    algo.stop()
    return result


if __name__ == "__main__":
    main()
