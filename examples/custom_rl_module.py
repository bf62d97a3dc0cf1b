"""A custom RLModule: a tiny actor-critic of your own, trained by PPO on CartPole-v1.

    python examples/custom_rl_module.py
    python examples/custom_rl_module.py --stop-iters 5

PPO needs two things from a module: action distribution inputs (`_forward`) and value estimates
(`ValueFunctionAPI.compute_values`). Everything else (sampling actions, log-probs, the loss) is
flywheel's.
"""

import argparse

import torch
from torch import nn

from flywheel import Columns, PPOConfig, RLModuleSpec, TorchRLModule, ValueFunctionAPI


class TinyActorCritic(TorchRLModule, ValueFunctionAPI):
    """Separate policy and value MLPs with one hidden layer each."""

    def setup(self) -> None:
        # setup() runs in the constructor; spaces and model_config are already set.
        hidden = self.model_config.get("hidden", 32)
        n_obs = self.observation_space.shape[0]
        self.pi = nn.Sequential(nn.Linear(n_obs, hidden), nn.Tanh(), nn.Linear(hidden, self.action_space.n))
        self.vf = nn.Sequential(nn.Linear(n_obs, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def _forward(self, batch: dict, **kwargs) -> dict:
        # One forward for all phases (inference, exploration, training): the logits of a
        # categorical distribution, which flywheel picks for a Discrete action space.
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_values(self, batch: dict, embeddings=None) -> torch.Tensor:
        # Called by PPO's learner pipeline (GAE) and loss; one value per timestep.
        return self.vf(batch[Columns.OBS]).squeeze(-1)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=200.0, help="stop at this mean episode return")
    parser.add_argument("--stop-iters", type=int, default=100, help="... or after this many iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=8)
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=1e-3,
            train_batch_size_per_learner=1024,
            minibatch_size=256,
            num_epochs=4,
            vf_clip_param=1e4,
        )
        # The spec names the class; spaces are filled in from the env when the algorithm builds it.
        .rl_module(rl_module_spec=RLModuleSpec(module_class=TinyActorCritic, model_config={"hidden": 64}))
        .debugging(seed=0)
    )
    if args.smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        args.stop_iters = 1

    algo = config.build_algo()
    print(f"module: {type(algo.get_module()).__name__}")
    for _ in range(args.stop_iters):
        result = algo.train()
        ret = result["env_runners"]["episode_return_mean"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f}")
        if ret >= args.stop_reward:
            break
    algo.stop()
    return result


if __name__ == "__main__":
    main()
