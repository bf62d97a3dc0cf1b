"""`Algorithm.setup(config)`: the hook RLlib's Algorithm (a Tune Trainable) calls from its constructor.

A subclass overrides it, calls `super().setup(config)` (which builds runners and learners and calls
`on_algorithm_init`), and sets up its own parts before or after; `from_checkpoint` runs it too.
"""

from __future__ import annotations

from typing import Any

from flywheel import PPO, Algorithm, PPOConfig
from flywheel.algorithms.dqn import DQN, DQNConfig
from flywheel.testing import CountingEnv


def _config(**callbacks: Any) -> PPOConfig:
    return (
        PPOConfig(algo_class=PPOWithSetup)
        .environment(CountingEnv, env_config={"episode_len": 6})
        .training(train_batch_size_per_learner=24, minibatch_size=12, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .callbacks(**callbacks)
        .debugging(seed=0)
    )


class PPOWithSetup(PPO):
    """Records what its `setup` saw; counts its training steps in an attribute `setup` creates, which
    its checkpoints hold."""

    def setup(self, config: Any) -> None:
        self.events = ["before super().setup"]
        self.config_seen = config
        self.built_before_super = hasattr(self, "env_runner_group") or hasattr(self, "learner_group")
        super().setup(config)
        self.events.append("after super().setup")
        self.built_after_super = (self.env_runner_group.local_env_runner, self.learner_group)
        self.env_runner_group.foreach_env_runner(lambda runner: setattr(runner, "shared", "handle"))
        self.learner_group.foreach_learner(lambda learner: setattr(learner, "shared", "handle"))
        self.steps_seen = 0

    def training_step(self) -> None:
        self.steps_seen += 1
        super().training_step()

    def get_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        state = super().get_state(*args, **kwargs)
        state["steps_seen"] = self.steps_seen
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        if "steps_seen" in state:
            self.steps_seen = state["steps_seen"]


def test_an_override_sees_the_config_and_super_setup_builds_runners_and_learners():
    algo = _config().build_algo()
    try:
        assert algo.config_seen is algo.config and algo.config_seen.is_frozen
        assert algo.config_seen.train_batch_size_per_learner == 24
        assert algo.built_before_super is False
        runner, learner_group = algo.built_after_super
        assert runner is algo.env_runner and learner_group is algo.learner_group
        assert algo.env_runner.shared == "handle"
        assert algo.learner_group.foreach_learner(lambda learner: learner.shared) == ["handle"]
    finally:
        algo.stop()


def test_on_algorithm_init_runs_inside_super_setup_as_in_rllib():
    def record(algorithm, **kwargs):
        algorithm.events.append("on_algorithm_init")

    algo = _config(on_algorithm_init=record).build_algo()
    try:
        assert algo.events == ["before super().setup", "on_algorithm_init", "after super().setup"]
    finally:
        algo.stop()


def test_attributes_set_in_setup_reach_training_step():
    algo = _config().build_algo()
    try:
        assert algo.steps_seen == 0
        algo.train()
        algo.train()
        assert algo.steps_seen == 2  # PPO: one training step an iteration (no minimum time or steps)
    finally:
        algo.stop()


def test_from_checkpoint_builds_the_subclass_through_its_setup_then_restores_its_state(tmp_path):
    algo = _config().build_algo()
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
        saved_steps, saved_weights = algo.steps_seen, algo.learner_group.get_weights()
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path, classes=[PPOWithSetup])
    try:
        assert type(restored) is PPOWithSetup
        assert restored.events == ["before super().setup", "after super().setup"]
        assert restored.env_runner.shared == "handle"
        assert restored.steps_seen == saved_steps == 1 and restored.iteration == 1
        weights = restored.learner_group.get_weights()
        assert all((weights[m][k] == saved_weights[m][k]).all() for m in weights for k in weights[m])
        restored.train()
        assert restored.steps_seen == 2
    finally:
        restored.stop()


class DQNWithSetup(DQN):
    def setup(self, config: Any) -> None:
        super().setup(config)
        self.buffer_after_super = self.replay_buffer


def test_an_algorithms_own_parts_are_built_by_super_setup():
    config = (
        DQNConfig(algo_class=DQNWithSetup)
        .environment(CountingEnv, env_config={"episode_len": 6})
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    algo = config.build_algo()
    try:
        assert algo.buffer_after_super is algo.replay_buffer
    finally:
        algo.stop()
