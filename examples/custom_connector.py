"""Custom connector pieces: one rewriting observations on their way to the module, one acting on
actions on their way to the env. PPO on CartPole-v1.

    python examples/custom_connector.py
    python examples/custom_connector.py --stop-iters 5

Env-to-module pieces run before flywheel's defaults (which batch observations and make tensors), so
what a piece writes into the episodes is what the module sees and what the learner trains on.
Module-to-env pieces run after the defaults and see numpy actions.
"""

import argparse

import numpy as np

from flywheel import Columns, ConnectorV2, PPOConfig


class ScaleObs(ConnectorV2):
    """Env-to-module piece: rewrites the newest observation of every episode (API.md §4)."""

    def __init__(self, input_observation_space=None, input_action_space=None, *, factor=0.5, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.factor = factor

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs):
        for episode in episodes:
            obs = episode.get_observations(-1)
            episode.set_observations(new_data=obs * self.factor, at_indices=-1)
        return batch


class CountActions(ConnectorV2):
    """Module-to-env piece: counts how often each action was chosen (on this runner)."""

    def __init__(self, input_observation_space=None, input_action_space=None, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.counts = np.zeros(2, np.int64)

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs):
        # batch[Columns.ACTIONS] holds one action per sub-env, as numpy.
        self.counts += np.bincount(batch[Columns.ACTIONS], minlength=2)
        return batch


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=200.0, help="stop at this mean episode return")
    parser.add_argument("--stop-iters", type=int, default=100, help="... or after this many iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_envs_per_env_runner=8,
            # Hooks build the pieces, once per runner: (env, spaces, device) and (env, spaces).
            env_to_module_connector=lambda env, spaces, device: ScaleObs(factor=0.5),
            module_to_env_connector=lambda env, spaces: CountActions(),
        )
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=2.5e-4,
            train_batch_size_per_learner=1024,
            minibatch_size=256,
            num_epochs=4,
            vf_clip_param=1e4,
        )
        .debugging(seed=0)
    )
    if args.smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        args.stop_iters = 1

    algo = config.build_algo()
    for _ in range(args.stop_iters):
        result = algo.train()
        ret = result["env_runners"]["episode_return_mean"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f}")
        if ret >= args.stop_reward:
            break
    counts = algo.env_runner.module_to_env["CountActions"].counts
    print(f"actions chosen so far: left {counts[0]}, right {counts[1]}")
    algo.stop()
    return result


if __name__ == "__main__":
    main()
