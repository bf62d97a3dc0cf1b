"""Your own algorithm: REINFORCE (vanilla policy gradient) on CartPole-v1, written on the same surface
flywheel's algorithms use (docs/concepts/algorithms.md explains each part).

    python examples/custom_algorithm.py
    python examples/custom_algorithm.py --stop-iters 10

Five parts: a learner piece that adds each step's return-to-go, a policy network, a learner with the
REINFORCE loss, a config with the algorithm's one setting, and `training_step`: sample whole
episodes, update the learners, send the weights to the runners.
"""

import argparse
import dataclasses

import numpy as np
from torch import nn

from flywheel import Algorithm, AlgorithmConfig, Columns, RLModuleSpec, TorchLearner, TorchRLModule
from flywheel.algorithms.config_settings import setting
from flywheel.connectors import ConnectorV2


class ReturnsToGo(ConnectorV2):
    """Learner piece: each step's discounted return from there to the end of its episode."""

    def __init__(self, *args, gamma=0.99, **kwargs):
        super().__init__(*args, **kwargs)
        self.gamma = gamma

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in self.single_agent_episode_iterator(episodes):
            rewards, returns, running = episode.get_rewards(), np.zeros(len(episode), np.float32), 0.0
            for t in reversed(range(len(episode))):
                running = returns[t] = rewards[t] + self.gamma * running
            self.add_n_batch_items(batch, "returns", returns, len(episode), episode)
        return batch


class PolicyNet(TorchRLModule):
    def setup(self):
        n_obs, hidden = self.observation_space.shape[0], self.model_config.get("hidden", 32)
        self.pi = nn.Sequential(nn.Linear(n_obs, hidden), nn.Tanh(), nn.Linear(hidden, self.action_space.n))

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}


class VPGLearner(TorchLearner):
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        dist_cls = self.module[module_id].get_train_action_dist_cls()
        logp = dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS]).logp(batch[Columns.ACTIONS])
        returns = batch["returns"]
        loss = -(logp * (returns - returns.mean())).mean()  # the mean return as the baseline
        self.metrics.log_value((module_id, "policy_loss"), loss.detach(), reduce="mean")
        return loss


@dataclasses.dataclass(init=False, repr=False, eq=True)
class VPGConfig(AlgorithmConfig):
    num_episodes_per_train_batch: int = setting("training", 10)
    """Complete episodes sampled for each update."""

    def get_default_algo_class(self):
        return VPG

    def get_default_learner_class(self):
        return VPGLearner

    def get_default_rl_module_spec(self):
        return RLModuleSpec(module_class=PolicyNet)

    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        pipeline = super().build_learner_connector(input_observation_space, input_action_space, device)
        pipeline.prepend(ReturnsToGo(gamma=self.gamma))
        return pipeline


class VPG(Algorithm):
    def training_step(self):
        episodes = self.sample_episodes(num_episodes=self.config.num_episodes_per_train_batch)
        self.update_learners(episodes)
        self.sync_runner_weights()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=150.0, help="stop at this mean episode return")
    parser.add_argument("--stop-iters", type=int, default=60, help="... or after this many iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = (
        VPGConfig()
        .environment("CartPole-v1")
        .training(lr=0.01, num_episodes_per_train_batch=10, num_epochs=1, minibatch_size=None)
        .debugging(seed=0)
    )
    if args.smoke:
        config.training(num_episodes_per_train_batch=2)
        args.stop_iters = 1

    algo = config.build_algo()
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
