"""A PettingZoo parallel env (rock-paper-scissors) trained with flywheel through the adapter.

    pip install pettingzoo
    python examples/pettingzoo_parallel.py

`PettingZooEnv` turns any PettingZoo ``ParallelEnv`` into a flywheel `MultiAgentEnv`. Here
"player_0" learns with PPO against "player_1", a fixed module that almost always plays rock,
so the learner should find paper. RPS observations are Discrete (the opponent's last move), so
`FlattenObservations(multi_agent=True)` one-hot encodes each agent's observations first.
"""

import argparse

import torch
from pettingzoo.classic import rps_v2

from flywheel import Columns, MultiRLModuleSpec, PPOConfig, RLModuleSpec, TorchRLModule, ValueFunctionAPI
from flywheel.connectors.env_to_module import FlattenObservations
from flywheel.env.pettingzoo import PettingZooEnv

ROCK, PAPER = 0, 1


class MostlyRock(TorchRLModule, ValueFunctionAPI):
    """A fixed opponent: rock with probability ~0.98, no weights to train."""

    def _forward(self, batch: dict, **kwargs) -> dict:
        logits = torch.zeros(batch[Columns.OBS].shape[0], self.action_space.n)
        logits[:, ROCK] = 5.0
        return {Columns.ACTION_DIST_INPUTS: logits}

    def compute_values(self, batch: dict, embeddings=None) -> torch.Tensor:
        return torch.zeros(batch[Columns.OBS].shape[0])


def make_rps(env_config) -> PettingZooEnv:
    return PettingZooEnv(rps_v2.parallel_env(max_cycles=env_config.get("max_cycles", 10)))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-iters", type=int, default=10, help="training iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = (
        PPOConfig()
        .environment(make_rps, env_config={"max_cycles": 10})
        .multi_agent(
            policies={"learner", "rock"},
            policy_mapping_fn=lambda agent_id, episode, **kw: "learner" if agent_id == "player_0" else "rock",
            policies_to_train={"learner"},
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={"rock": RLModuleSpec(MostlyRock)}))
        .env_runners(
            num_envs_per_env_runner=4,
            env_to_module_connector=lambda env, spaces, device: FlattenObservations(multi_agent=True),
        )
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=1e-3,
            train_batch_size_per_learner=1000,
            minibatch_size=100,
            num_epochs=5,
        )
        .debugging(seed=0)
    )
    if args.smoke:
        config.training(train_batch_size_per_learner=200, minibatch_size=50, num_epochs=1)
        args.stop_iters = 1

    algo = config.build_algo()
    for _ in range(args.stop_iters):
        result = algo.train()
        env_runners = result["env_runners"]
        learner = env_runners.get("module_episode_returns_mean", {}).get("learner", float("nan"))
        # Zero-sum: the episode return over both players is 0; the learner's own return is what grows.
        print(
            f"iteration {result['training_iteration']}: mean return {env_runners['episode_return_mean']:.1f} "
            f"(learner {learner:+.1f} of 10 rounds)"
        )
    games = algo.env_runner.sample(num_episodes=10, explore=False)
    paper = sum(int((g.agent_episodes["player_0"].get_actions() == PAPER).sum()) for g in games)
    print(f"the learner played paper in {paper} of {sum(len(g) for g in games)} rounds")
    algo.stop()
    return result


if __name__ == "__main__":
    main()
