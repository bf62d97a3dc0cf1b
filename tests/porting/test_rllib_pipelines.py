"""RLlib 2.60's own connector, learner and algorithm example classes on flywheel (issue 15, items 2-3).

Each class is read from the installed ray wheel, ported by `flywheel port` into a temporary folder
(the `ported_rllib_examples` fixture) with no manual edit, imported from there as `examples.*`,
and run in the role its example script gives it (same env, same pipeline position, same settings
where they matter; smaller budgets). Each test asserts what its example is about. Nothing of RLlib
is copied into the repo, and `ray.rllib` is never imported.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel.algorithms.dqn import DQNConfig
from flywheel.algorithms.ppo import PPOConfig
from flywheel.algorithms.ppo.learner import PPOTorchLearner
from flywheel.columns import Columns
from flywheel.connectors.env_to_module import FlattenObservations, MeanStdFilter
from flywheel.core.rl_module import DefaultModelConfig, MultiRLModuleSpec, RLModuleSpec
from flywheel.env import register_env
from flywheel.env_runners.single_agent import SingleAgentEnvRunner
from flywheel.episodes import TransitionEpisodes
from flywheel.typing import ALL_MODULES, DEFAULT_MODULE_ID

ROLES = {
    "connectors/classes/count_based_curiosity.py": "CountBasedCuriosity: a learner piece of PPO on an 8x8 "
    "FrozenLake behind FlattenObservations (curiosity/count_based_curiosity.py)",
    "connectors/classes/euclidian_distance_based_curiosity.py": "EuclidianDistanceBasedCuriosity: a learner piece "
    "of PPO on MountainCar-v0 behind MeanStdFilter (curiosity/euclidian_distance_based_curiosity.py)",
    "connectors/classes/add_other_agents_row_index_to_xy_pos.py": "AddOtherAgentsRowIndexToXYPos: the "
    "MultiAgentObservationPreprocessor of a two-policy PPO on DoubleRowCorridorEnv, before "
    "FlattenObservations(multi_agent=True, agent_ids=['agent_0']) (connectors/multi_agent_observation_preprocessor.py)",
    "connectors/classes/protobuf_cartpole_observation_decoder.py": "ProtobufCartPoleObservationDecoder: the "
    "env-to-module piece of PPO on CartPoleWithProtobufObservationSpace (envs/env_w_protobuf_observations.py)",
    "learners/classes/custom_ppo_loss_fn_learner.py": "PPOTorchLearnerWithWeightRegularizerLoss: PPO's "
    "learner_class on CartPole (learners/ppo_with_custom_loss_fn.py)",
    "learners/classes/separate_vf_lr_and_optimizer_learner.py": "PPOTorchLearnerWithSeparateVfOptimizer: PPO's "
    "learner_class with separate value layers (learners/separate_vf_lr_and_optimizer.py)",
    "learners/classes/vpg_torch_learner.py": "VPGTorchLearner: the VPG algorithm's default learner "
    "(algorithms/vpg_custom_algorithm.py)",
    "learners/classes/vpg_torch_learner_shared_optimizer.py": "VPGTorchLearnerSharedOptimizer: VPG's "
    "learner_class for a shared encoder on MultiAgentCartPole (multi_agent/shared_encoder_cartpole.py)",
    "learners/classes/intrinsic_curiosity_learners.py": "PPOTorchLearnerWithCuriosity / "
    "DQNTorchLearnerWithCuriosity: PPO's / DQN's learner_class with the ICM as a learner-only module on a "
    "12x12 FrozenLake (curiosity/intrinsic_curiosity_model_based_curiosity.py)",
    "rl_modules/classes/intrinsic_curiosity_model_rlm.py": "IntrinsicCuriosityModel: the learner-only ICM "
    "module next to PPO's and DQN's policy (same example)",
    "algorithms/classes/vpg.py": "VPGConfig / VPG: a custom Algorithm with its own config and training_step "
    "(algorithms/vpg_custom_algorithm.py)",
    "rl_modules/classes/vpg_torch_rlm.py": "VPGTorchRLModule: VPG's default module (same example)",
    "rl_modules/classes/vpg_using_shared_encoder_rlm.py": "VPGMultiRLModuleWithSharedEncoder, SharedEncoder, "
    "VPGPolicyAfterSharedEncoder: VPG's multi-agent module (multi_agent/shared_encoder_cartpole.py)",
}
"""Every class file this test runs, with the role it runs in."""

SKIPPED = {
    "algorithms/classes/appo_w_shared_data_actor.py": "ports with no line left (APPO exists); its example "
    "runs as a script (test_example_scripts.py), not here; restore_env_runners(group) is never called "
    "(flywheel restarts runners with the learners' weights and connector states)",
    "algorithms/classes/maml_lr_differentiable_learner.py": "needs TorchDifferentiableLearner (differentiable "
    "inner-loop updates) and DifferentiableLearnerConfig, not in flywheel",
    "algorithms/classes/maml_lr_meta_learner.py": "needs TorchMetaLearner (an outer update through "
    "update(others_training_data=...)), not in flywheel",
    "algorithms/classes/maml_lr_differentiable_rlm.py": "its example trains it only with the two MAML "
    "learners (TorchDifferentiableLearner, TorchMetaLearner), not in flywheel",
}
"""Classes of these folders that cannot run yet, each with the capability flywheel lacks."""

FOLDERS = ("connectors/classes", "learners/classes", "algorithms/classes")


@pytest.fixture(scope="module")
def examples(ported_rllib_examples):
    """The ported `examples` package importable (its parent folder on `sys.path`), for this module."""
    out, _ = ported_rllib_examples
    sys.path.insert(0, str(out.parent))
    yield importlib.import_module("examples")
    sys.path.remove(str(out.parent))
    for name in [name for name in sys.modules if name == "examples" or name.startswith("examples.")]:
        del sys.modules[name]


def example(name: str):
    return importlib.import_module(f"examples.{name}")


def test_every_class_file_is_run_or_skipped_with_its_reason(rllib_examples):
    files = {
        path.relative_to(rllib_examples).as_posix()
        for folder in FOLDERS
        for path in (rllib_examples / folder).glob("*.py")
        if path.name != "__init__.py"
    }
    skipped_files = {name.split("::")[0] for name in SKIPPED}
    assert files <= set(ROLES) | skipped_files
    assert all(reason for reason in {**ROLES, **SKIPPED}.values())


def test_the_classes_port_with_no_line_left_to_edit(ported_rllib_examples):
    out, report = ported_rllib_examples
    reported = {Path(p.path).relative_to(out).as_posix(): p for p in report.problems}
    assert sorted(set(ROLES) & set(reported)) == []
    # The skipped ones that import what flywheel lacks are reported, not silently ported.
    assert {name for name in reported if name.startswith(FOLDERS)} == {
        "algorithms/classes/maml_lr_differentiable_learner.py",
        "algorithms/classes/maml_lr_meta_learner.py",
    }


@pytest.mark.parametrize("name", sorted(SKIPPED))
def test_skipped_class(name):
    """One skip per class that cannot run yet, so the test report counts them and names what is missing."""
    pytest.skip(f"{name}: {SKIPPED[name]}")


# ---------------------------------------------------------------- recording learners


class RecordingLearnerMixin:
    """Records, per update, the extrinsic rewards of the episodes it gets (before any piece changes
    them), the rewards the loss of `default_policy` sees, and the update's results."""

    extrinsic: list[float] = []
    seen: list[float] = []
    results: list[dict] = []

    def update(self, batch=None, *, episodes=None, **kwargs):
        if episodes is not None:
            type(self).extrinsic.append(extrinsic_rewards(episodes))
            type(self).seen.append(0.0)
        results = super().update(batch, episodes=episodes, **kwargs)
        type(self).results.append(results)
        return results

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        if module_id == DEFAULT_MODULE_ID:
            type(self).seen[-1] += float(batch[Columns.REWARDS].sum())
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


def extrinsic_rewards(episodes) -> float:
    """The sum of the episodes' rewards; replayed transitions are read as columns (their episode objects
    stay unbuilt, so the learner pipeline takes the path it takes in training)."""
    if isinstance(episodes, TransitionEpisodes):
        return sum(float(np.sum(block.columns[Columns.REWARDS])) for block in episodes.blocks)
    return sum(float(np.sum(e.get_rewards())) for e in episodes)


def recording(base: type) -> type:
    records = {"extrinsic": [], "seen": [], "results": []}
    return type(f"Recording{base.__name__}", (RecordingLearnerMixin, base), records)


def one_pass(config: PPOConfig, rows: int) -> PPOConfig:
    """Each update trains on every row exactly once, in one minibatch (2 sub-envs, `rows` even)."""
    return config.training(train_batch_size_per_learner=rows, minibatch_size=rows, num_epochs=1)


# ---------------------------------------------------------------- connectors

FROZEN_LAKE_8X8 = {  # RLlib's count-based curiosity example: few paths, 14 steps at most
    "is_slippery": False,
    "desc": ["SFFHFFFH", "FFFHFFFF", "FFFHHFFF", "FFFFFFFH", "HFFHFFFF", "HHFHFFHF", "FFFHFHHF", "FHFFFFFG"],
    "max_episode_steps": 14,
}


def test_count_based_curiosity_adds_its_bonus_to_the_rewards_ppo_trains_on(examples):
    CountBasedCuriosity = example("connectors.classes.count_based_curiosity").CountBasedCuriosity
    register_env("fl_8x8", lambda cfg: gym.make("FrozenLake-v1", **FROZEN_LAKE_8X8))
    learner = recording(PPOTorchLearner)
    config = one_pass(
        PPOConfig()
        .environment("fl_8x8")
        .env_runners(num_envs_per_env_runner=2, env_to_module_connector=lambda env: FlattenObservations())
        .training(learner_connector=lambda *args, **kw: CountBasedCuriosity(), vf_loss_coeff=0.01)
        .learners(learner_class=learner)
        .rl_module(model_config=DefaultModelConfig(vf_share_layers=True))
        .debugging(seed=0),
        rows=96,
    )
    algo = config.build_algo()
    runner = algo.env_runner
    sampled = []
    original_sample = runner.sample

    def sample(**kwargs):  # keep the episodes' one-hot observations for the expected bonus
        episodes = original_sample(**kwargs)
        sampled.append([np.asarray(e.get_observations()) for e in episodes])
        return episodes

    runner.sample = sample
    algo.train()
    algo.stop()
    # As in RLlib, the piece sees each chunk extended by its bootstrap timestep: it counts the
    # chunk's last observation too and gives that extra row a bonus, which the loss does not see.
    counts: dict[tuple, int] = {}
    bonus = 0.0
    for observations in sampled[0]:
        for i, obs in enumerate(observations):
            key = tuple(obs)
            counts[key] = counts.get(key, 0) + 1
            bonus += 1.0 / counts[key] if i < len(observations) - 1 else 0.0
    assert bonus > 10  # first visits of a state add a full 1.0
    assert learner.seen[0] == pytest.approx(learner.extrinsic[0] + bonus, rel=1e-5)


def test_euclidian_distance_curiosity_adds_a_bonus_on_mountain_car(examples):
    piece = example("connectors.classes.euclidian_distance_based_curiosity").EuclidianDistanceBasedCuriosity
    learner = recording(PPOTorchLearner)
    config = one_pass(
        PPOConfig()
        .environment("MountainCar-v0")
        .env_runners(num_envs_per_env_runner=2, env_to_module_connector=lambda env: MeanStdFilter())
        .training(
            learner_connector=lambda *args, **kw: piece(), grad_clip=20.0, entropy_coeff=0.003, lambda_=0.98
        )
        .learners(learner_class=learner)
        .debugging(seed=0),
        rows=64,
    )
    algo = config.build_algo()
    for _ in range(2):
        algo.train()
    algo.stop()
    assert learner.extrinsic == [-64.0, -64.0]  # MountainCar: -1 per step
    # The first chunk of the first update meets an empty buffer (no bonus), every later one a full one.
    assert learner.seen[0] > learner.extrinsic[0] and learner.seen[1] > learner.extrinsic[1]


def test_other_agents_row_index_reaches_each_policy_in_its_own_space(examples):
    preprocessor = example(
        "connectors.classes.add_other_agents_row_index_to_xy_pos"
    ).AddOtherAgentsRowIndexToXYPos
    env_class = example("envs.classes.multi_agent.double_row_corridor_env").DoubleRowCorridorEnv
    config = (
        PPOConfig()
        .environment(env_class)
        .env_runners(
            num_envs_per_env_runner=2,
            env_to_module_connector=lambda env, spaces, device: [
                preprocessor(),
                FlattenObservations(multi_agent=True, agent_ids=["agent_0"]),
            ],
        )
        .training(
            train_batch_size_per_learner=64, minibatch_size=32, gamma=0.95, vf_loss_coeff=0.01, lambda_=0.1
        )
        .multi_agent(
            policies={"p0", "p1"},
            policy_mapping_fn=lambda aid, eps, **kw: "p0" if aid == "agent_0" else "p1",
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    # agent_0: one-hot of (its cell index, the other agent's row or 2 = done); agent_1: (row, col, row of agent_0).
    p1_space = algo.get_module("p1").observation_space
    assert p1_space.shape == (3,) and p1_space.dtype == np.float32
    corridor = int(p1_space.high[1]) + 1  # columns (the env's default: 15)
    assert corridor == 15 and algo.get_module("p0").observation_space.shape == (2 * corridor + 3,)
    result = algo.train()
    assert result["learners"]["p0"]["num_module_steps_trained"] > 0
    assert result["learners"]["p1"]["num_module_steps_trained"] > 0
    episodes = algo.env_runner.sample(num_timesteps=20)
    observations = {"agent_0": [], "agent_1": []}
    for episode in episodes:
        for agent_id, agent_episode in episode.agent_episodes.items():
            observations[agent_id].extend(
                np.asarray(agent_episode.get_observations(slice(0, len(agent_episode))))
            )
    agent_0, agent_1 = np.asarray(observations["agent_0"]), np.asarray(observations["agent_1"])
    assert agent_0.shape[1:] == (2 * corridor + 3,) and (agent_0.sum(axis=1) == 2.0).all()  # two one-hots
    assert agent_1.shape[1:] == (3,) and set(agent_1[:, 2]) <= {0.0, 1.0, 2.0}
    algo.stop()


def test_protobuf_observations_are_decoded_for_the_module(examples):
    decoder = example(
        "connectors.classes.protobuf_cartpole_observation_decoder"
    ).ProtobufCartPoleObservationDecoder
    env_class = example(
        "envs.classes.cartpole_with_protobuf_observation_space"
    ).CartPoleWithProtobufObservationSpace
    config = one_pass(
        PPOConfig()
        .environment(env_class)
        .env_runners(num_envs_per_env_runner=2, env_to_module_connector=lambda env, spaces, device: decoder())
        .debugging(seed=0),
        rows=200,
    )
    algo = config.build_algo()
    assert env_class().observation_space.dtype == np.uint8  # the env sends bytes
    assert algo.get_module().observation_space == gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    result = algo.train()
    assert 8 <= result["env_runners"]["episode_return_mean"] < 200  # CartPole's episodes, decoded
    episode = algo.env_runner.sample(num_timesteps=8)[0]
    assert np.asarray(episode.get_observations(0)).shape == (4,)
    algo.stop()


# ---------------------------------------------------------------- learners


def cartpole_episodes(config, steps: int = 64) -> list:
    runner = SingleAgentEnvRunner(config=config)
    episodes = runner.sample(num_timesteps=steps)
    runner.stop()
    return episodes


def test_weight_regularizer_loss_is_the_ppo_loss_plus_the_mean_weight_term(examples):
    learner_class = example(
        "learners.classes.custom_ppo_loss_fn_learner"
    ).PPOTorchLearnerWithWeightRegularizerLoss
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(
            learner_class=learner_class,
            learner_config_dict={"regularizer_coeff": 0.5},
            num_epochs=2,
            vf_loss_coeff=0.01,
            lr=0.01,
            train_batch_size_per_learner=128,
            minibatch_size=64,
        )
        .rl_module(model_config=DefaultModelConfig(vf_share_layers=True))
        .debugging(seed=0)
    )
    learner = config.build_learner(env=gym.make("CartPole-v1"))
    batch = learner.learner_connector(
        rl_module=learner.module, batch={}, episodes=cartpole_episodes(config), shared_data={}
    )[DEFAULT_MODULE_ID]
    fwd_out = learner.module[DEFAULT_MODULE_ID].forward_train(batch)
    args = {"module_id": DEFAULT_MODULE_ID, "config": config, "batch": batch, "fwd_out": fwd_out}
    total = learner.compute_loss_for_module(**args)
    base = PPOTorchLearner.compute_loss_for_module(learner, **args)
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    mean_weight = torch.mean(torch.stack([w.mean() for w in params]))
    # Both losses are float32 sums: their difference is exact to a few ulps of the loss itself.
    ulps = 4 * torch.finfo(torch.float32).eps * max(1.0, abs(float(base.detach())))
    assert float((total - base).detach()) == pytest.approx(0.5 * float(mean_weight.detach()), abs=ulps)
    # In its role: PPO trains with it and reports the term.
    algo = config.build_algo()
    result = algo.train()["learners"][DEFAULT_MODULE_ID]
    algo.stop()
    assert np.isfinite(result["mean_weight"]) and np.isfinite(result["total_loss"])


def test_separate_vf_optimizer_steps_each_branch_with_its_own_lr(examples):
    learner_class = example(
        "learners.classes.separate_vf_lr_and_optimizer_learner"
    ).PPOTorchLearnerWithSeparateVfOptimizer
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(
            learner_class=learner_class,
            learner_config_dict={"lr_vf": 0.0005},
            num_epochs=6,
            vf_loss_coeff=1.0,
            lr=0.001,
            train_batch_size_per_learner=128,
            minibatch_size=64,
        )
        .rl_module(model_config=DefaultModelConfig(vf_share_layers=False))
        .debugging(seed=0)
    )
    learner = config.build_learner(env=gym.make("CartPole-v1"))
    module = learner.module[DEFAULT_MODULE_ID]
    pi = [*module.encoder.actor_encoder.parameters(), *module.pi.parameters()]
    vf = [*module.encoder.critic_encoder.parameters(), *module.vf.parameters()]
    before = [p.detach().clone() for p in pi + vf]
    results = learner.update(episodes=cartpole_episodes(config), num_epochs=1, minibatch_size=4096)
    steps = [(p - b).abs().max().item() for p, b in zip(pi + vf, before, strict=True)]
    # Adam's first step moves every weight with a gradient by (almost exactly) its optimizer's lr.
    assert max(steps[: len(pi)]) == pytest.approx(0.001, rel=1e-3)
    assert max(steps[len(pi) :]) == pytest.approx(0.0005, rel=1e-3)
    assert results[DEFAULT_MODULE_ID]["optim_for_pi_learning_rate"] == 0.001
    assert results[DEFAULT_MODULE_ID]["optim_for_vf_learning_rate"] == 0.0005
    algo = config.build_algo()  # in its role
    result = algo.train()["learners"][DEFAULT_MODULE_ID]
    algo.stop()
    assert (result["optim_for_pi_learning_rate"], result["optim_for_vf_learning_rate"]) == (0.001, 0.0005)


# ---------------------------------------------------------------- the VPG algorithm


def test_vpg_algorithm_trains_on_complete_episodes_with_returns_to_go(examples):
    VPGConfig = example("algorithms.classes.vpg").VPGConfig
    VPGTorchRLModule = example("rl_modules.classes.vpg_torch_rlm").VPGTorchRLModule
    config = (
        VPGConfig()
        .environment("CartPole-v1")
        .training(num_episodes_per_train_batch=4, lr=0.0005)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    learner = algo.learner_group.foreach_learner(lambda learner: learner)[0]
    assert type(learner).__name__ == "VPGTorchLearner"
    assert type(learner.module[DEFAULT_MODULE_ID]) is VPGTorchRLModule
    assert [piece.name for piece in learner.learner_connector.connectors][0] == "ComputeReturnsToGo"
    for iteration in (1, 2):
        result = algo.train()
        assert result["env_runners"]["num_episodes"] == 4  # the VPG's own training_step: 4 whole episodes
        steps = result["env_runners"]["num_env_steps_sampled"]
        assert result["learners"]["__all_modules__"]["num_env_steps_trained"] == steps
        assert result["learners"]["__all_modules__"]["weights_seq_no"] == iteration
        learned = result["learners"][DEFAULT_MODULE_ID]
        assert {"action_0_return_to_go_mean", "action_1_return_to_go_mean", "mean_weight"} <= set(learned)
    assert result["episode_timesteps_sampled_mean_win100"] > 0
    # sync_weights(from_worker_or_learner_group=...) gave the runner the learner's weights.
    weights = algo.learner_group.get_weights(inference_only=True)[DEFAULT_MODULE_ID]
    runner_weights = algo.env_runner.module.get_state()
    assert all(np.array_equal(runner_weights[name], value) for name, value in weights.items())
    algo.stop()


def test_vpg_shared_encoder_is_trained_by_both_policies_through_one_optimizer(examples):
    import examples.envs.classes.multi_agent as ma_envs

    VPGConfig = example("algorithms.classes.vpg").VPGConfig
    shared = example("learners.classes.vpg_torch_learner_shared_optimizer").VPGTorchLearnerSharedOptimizer
    rlm = example("rl_modules.classes.vpg_using_shared_encoder_rlm")
    cartpole = gym.make("CartPole-v1")
    specs = MultiRLModuleSpec(
        multi_rl_module_class=rlm.VPGMultiRLModuleWithSharedEncoder,
        rl_module_specs={
            rlm.SHARED_ENCODER_ID: RLModuleSpec(
                module_class=rlm.SharedEncoder,
                model_config={"embedding_dim": 8},
                observation_space=cartpole.observation_space,
                action_space=cartpole.action_space,
            ),
            **{
                pid: RLModuleSpec(
                    module_class=rlm.VPGPolicyAfterSharedEncoder,
                    model_config={"embedding_dim": 8, "hidden_dim": 16},
                )
                for pid in ("p0", "p1")
            },
        },
    )
    register_env("ma_cartpole", lambda _: ma_envs.MultiAgentCartPole(config={"num_agents": 2}))
    config = (
        VPGConfig()
        .environment("ma_cartpole")
        .training(learner_class=shared, train_batch_size=2048, lr=1e-2, num_episodes_per_train_batch=4)
        .env_runners(num_env_runners=0)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}")
        .rl_module(rl_module_spec=specs)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    learner = algo.learner_group.foreach_learner(lambda learner: learner)[0]
    assert type(learner.module) is rlm.VPGMultiRLModuleWithSharedEncoder
    assert (
        type(algo.env_runner.module) is rlm.VPGMultiRLModuleWithSharedEncoder
    )  # acting uses the encoder too
    assert learner.module.encoder is learner.module[rlm.SHARED_ENCODER_ID]
    [(module_id, name)] = [(slot.module_id, slot.name) for slot in learner.optimizer_slots()]
    assert (module_id, name) == (ALL_MODULES, "shared_optimizer")
    encoder_before = learner.module[rlm.SHARED_ENCODER_ID].get_state()
    result = algo.train()
    assert result["learners"]["p0"]["num_module_steps_trained"] > 0
    assert result["learners"]["p1"]["num_module_steps_trained"] > 0
    encoder_after = learner.module[rlm.SHARED_ENCODER_ID].get_state()
    assert any(not np.array_equal(encoder_before[k], encoder_after[k]) for k in encoder_before)
    runner_encoder = algo.env_runner.module[rlm.SHARED_ENCODER_ID].get_state()
    assert all(np.array_equal(runner_encoder[k], v) for k, v in encoder_after.items())
    algo.stop()


# ---------------------------------------------------------------- intrinsic curiosity (PPO + ICM)

FROZEN_LAKE_12X12 = {  # RLlib's ICM example: an open 12x12 lake, 22 steps at most
    "desc": ["SFFFFFFFFFFF", *["FFFFFFFFFFFF"] * 10, "FFFFFFFFFFFG"],
    "is_slippery": False,
    "max_episode_steps": 22,
}


def with_icm(policy: RLModuleSpec) -> MultiRLModuleSpec:
    """The example's modules: the policy, and the ICM (smaller nets) on the learners only."""
    icm_class = example("rl_modules.classes.intrinsic_curiosity_model_rlm").IntrinsicCuriosityModel
    parts = ("feature", "inverse", "forward")
    icm = RLModuleSpec(
        module_class=icm_class,
        learner_only=True,
        model_config={
            "feature_dim": 8,
            **{f"{part}_net_hiddens": (16,) for part in parts},
            **{f"{part}_net_activation": "relu" for part in parts},
        },
    )
    icm_id = example("learners.classes.intrinsic_curiosity_learners").ICM_MODULE_ID
    return MultiRLModuleSpec(rl_module_specs={DEFAULT_MODULE_ID: policy, icm_id: icm})


def in_icm_role(config, learner: type, policy: RLModuleSpec, num_envs: int):
    """`config` in the ICM example's role: the 12x12 lake behind FlattenObservations, the curiosity
    settings, `learner` as learner_class and the ICM as a learner-only module next to `policy`."""
    register_env("fl_12x12", lambda cfg: gym.make("FrozenLake-v1", **FROZEN_LAKE_12X12))
    return (
        config.environment("fl_12x12")
        .env_runners(
            num_envs_per_env_runner=num_envs, env_to_module_connector=lambda env: FlattenObservations()
        )
        .training(
            learner_config_dict={"intrinsic_reward_coeff": 0.05, "forward_loss_weight": 0.2},
            learner_class=learner,
        )
        .rl_module(rl_module_spec=with_icm(policy))
        .debugging(seed=0)
    )


def train_with_icm(config, icm_id: str) -> list[dict]:
    """Two iterations' `learners` results; asserts the ICM is on the learner only and trained."""
    algo = config.build_algo()
    trained = algo.learner_group.foreach_learner(lambda learner: learner)[0]
    assert sorted(trained.module.keys()) == [icm_id, DEFAULT_MODULE_ID]
    assert icm_id not in algo.env_runner.get_state()["rl_module"]  # only the policy acts
    icm_before = trained.module[icm_id].get_state()
    results = [algo.train()["learners"] for _ in range(2)]
    algo.stop()
    icm_after = trained.module[icm_id].get_state()
    assert any(not np.array_equal(icm_before[k], icm_after[k]) for k in icm_before)
    for result in results:
        assert {"forward_loss", "inverse_loss", "mean_intrinsic_rewards"} <= set(result[icm_id])
    return results


def test_icm_rewards_reach_ppo_and_the_icm_trains_on_the_learner_only(examples):
    curiosity = example("learners.classes.intrinsic_curiosity_learners")
    icm_id = curiosity.ICM_MODULE_ID
    learner = recording(curiosity.PPOTorchLearnerWithCuriosity)
    policy = RLModuleSpec(model_config={"vf_share_layers": True})
    config = one_pass(in_icm_role(PPOConfig(), learner, policy, num_envs=2).training(lr=0.0003), rows=88)
    for update, result in enumerate(train_with_icm(config, icm_id)):
        # One minibatch per update: the ICM computed its bonus with the weights its loss then saw, so
        # the rewards PPO trained on are the env's plus coeff x (the ICM's forward loss per row).
        bonus = learner.seen[update] - learner.extrinsic[update]
        assert bonus == pytest.approx(0.05 * 88 * result[icm_id]["mean_intrinsic_rewards"], rel=1e-4)
        assert bonus > 0


def test_icm_rewards_reach_dqn_and_the_icm_trains_on_the_learner_only(examples):
    curiosity = example("learners.classes.intrinsic_curiosity_learners")
    icm_id = curiosity.ICM_MODULE_ID
    learner = recording(curiosity.DQNTorchLearnerWithCuriosity)
    config = (
        in_icm_role(DQNConfig(), learner, RLModuleSpec(), num_envs=1)
        .training(
            train_batch_size_per_learner=128,
            lr=0.00075,
            replay_buffer_config={
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": 500000,
                "alpha": 0.6,
                "beta": 0.4,
            },
            epsilon=[[0, 1.0], [500000, 0.05]],
            n_step=(3, 5),
            double_q=True,
            dueling=True,
            num_steps_sampled_before_learning_starts=0,
        )
        .reporting(min_sample_timesteps_per_iteration=40)  # 10 training steps of 4 env steps
    )
    for result in train_with_icm(config, icm_id):
        assert "qf_loss" in result[DEFAULT_MODULE_ID] and "qf_loss" not in result[icm_id]
    assert len(learner.results) == 20  # one update (128 replayed transitions) per training step
    for seen, extrinsic, update in zip(learner.seen, learner.extrinsic, learner.results, strict=True):
        # One gradient step per update: the ICM computed its bonus with the weights its loss then saw,
        # so the (n-step) rewards of DQN's TD targets are the replayed ones plus coeff x (forward loss).
        bonus = seen - extrinsic
        assert bonus == pytest.approx(0.05 * 128 * update[icm_id]["mean_intrinsic_rewards"], rel=1e-4)
        assert bonus > 0
