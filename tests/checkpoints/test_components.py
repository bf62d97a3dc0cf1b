"""Round trips of every component: module weights, Adam states, filter statistics, sequence numbers."""

import os

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import (
    ConnectorPipelineV2,
    ConnectorV2,
    Learner,
    LearnerGroup,
    MultiRLModule,
    PPOConfig,
    RLModule,
    SingleAgentEnvRunner,
    SingleAgentEpisode,
)
from flywheel.connectors.env_to_module import MeanStdFilter, default_env_to_module_connectors
from flywheel.errors import CheckpointError
from flywheel.testing import CountingEnv

from .conftest import assert_states_equal

SPACES = (gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(2))


class ScaleObs(ConnectorV2):
    def __init__(self, input_observation_space=None, input_action_space=None, *, factor=0.5, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.factor = factor

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs):
        return batch


class FnPiece(ScaleObs):
    def __init__(self, fn=None, **kwargs):
        super().__init__(**kwargs)
        self.fn = fn


def _config(**training):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=2, **training)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )


def _episodes(config, n=64):
    runner = SingleAgentEnvRunner(config=config)
    episodes = runner.sample(num_timesteps=n)
    runner.stop()
    return episodes


def _trained_group(config):
    group = LearnerGroup(config=config, spaces=SPACES)
    group.update(episodes=_episodes(config), timesteps={"num_env_steps_sampled_lifetime": 64})
    return group


def test_rl_module_round_trip(tmp_path):
    module = _config().get_rl_module_spec(spaces=SPACES).build()
    with torch.no_grad():
        for param in module.parameters():
            param.normal_()
    path = module.save_to_path(tmp_path / "module")
    restored = RLModule.from_checkpoint(path)
    assert type(restored) is type(module)
    assert (restored.observation_space, restored.action_space) == SPACES
    assert restored.inference_only is False and restored.model_config == module.model_config
    assert_states_equal(restored.get_state(), module.get_state())
    obs = torch.randn(5, 4)
    torch.testing.assert_close(
        restored.forward_inference({"obs": obs})["action_dist_inputs"],
        module.forward_inference({"obs": obs})["action_dist_inputs"],
        rtol=0,
        atol=0,
    )


def test_multi_rl_module_round_trip(tmp_path):
    spec = _config().get_rl_module_spec(spaces=SPACES)
    multi = MultiRLModule({"p0": spec.build(), "p1": spec.build()})
    path = multi.save_to_path(tmp_path / "multi")
    assert sorted(os.listdir(path))[:2] == ["checkpoint_complete", "metadata.json"]
    restored = MultiRLModule.from_checkpoint(path)
    assert list(restored.keys()) == ["p0", "p1"]
    assert_states_equal(restored.get_state(), multi.get_state())


def test_learner_round_trip_keeps_adam_states_and_counters(tmp_path):
    group = _trained_group(_config())
    learner = group.foreach_learner(lambda learner: learner)[0]
    path = learner.save_to_path(tmp_path / "learner")
    restored = Learner.from_checkpoint(path)
    state, expected = restored.get_state(), learner.get_state()
    assert_states_equal(state, expected)
    adam = expected["optimizer"]["default_policy_default_optimizer"]["state"]
    assert adam["state"][0]["step"].shape == () and float(adam["state"][0]["step"]) == 4.0
    assert adam["param_groups"][0]["betas"] == (0.9, 0.999)
    assert (state["weights_seq_no"], state["timestep"]) == (1, 64)
    # The torch optimizer itself holds the restored moments.
    torch_state = restored.get_optimizer("default_policy").state_dict()
    np.testing.assert_array_equal(
        torch_state["state"][1]["exp_avg_sq"].numpy(), adam["state"][1]["exp_avg_sq"]
    )


def test_restored_learner_group_updates_exactly_like_the_original(tmp_path):
    config = _config()
    group = _trained_group(config)
    path = group.save_to_path(tmp_path / "group")
    assert sorted(os.listdir(os.path.join(path, "learner", "rl_module"))) == [
        "checkpoint_complete",
        "default_policy",
        "metadata.json",
        "state.msgpack",
        "state.safetensors",
    ]
    restored = LearnerGroup.from_checkpoint(path)
    episodes = _episodes(config)
    timesteps = {"num_env_steps_sampled_lifetime": 128}
    (results,) = group.update(episodes=episodes, timesteps=timesteps)
    (restored_results,) = restored.update(episodes=episodes, timesteps=timesteps)
    assert restored_results["default_policy"]["total_loss"] == results["default_policy"]["total_loss"]
    assert restored.weights_seq_no == group.weights_seq_no == 2
    assert_states_equal(restored.get_state(), group.get_state())


def test_learner_group_state_selection():
    group = LearnerGroup(config=_config(), spaces=SPACES)
    assert group.get_state(not_components=["learner"]) == {}
    state = group.get_state(components=["learner/weights_seq_no", "learner/timestep"])
    assert state == {"learner": {"weights_seq_no": 0, "timestep": 0}}


def _fed_pipeline():
    pipeline = ConnectorPipelineV2(
        *SPACES,
        connectors=[ScaleObs(factor=0.25), MeanStdFilter(clip=5.0)] + default_env_to_module_connectors(),
    )
    module = _config().get_rl_module_spec(spaces=(pipeline.observation_space, SPACES[1])).build()
    rng = np.random.default_rng(0)

    for _ in range(3):
        episodes = []
        for _ in range(4):
            episode = SingleAgentEpisode()
            episode.add_env_reset(rng.normal(size=4).astype(np.float32))
            episodes.append(episode)
        pipeline(rl_module=module, batch={}, episodes=episodes, explore=True, shared_data={})
    return pipeline


def test_pipeline_round_trip_rebuilds_pieces_and_filter_statistics(tmp_path):
    pipeline = _fed_pipeline()
    path = pipeline.save_to_path(tmp_path / "pipeline")
    restored = ConnectorPipelineV2.from_checkpoint(path, classes=[ScaleObs])
    assert [p.name for p in restored.connectors] == [p.name for p in pipeline.connectors]
    assert restored[0].factor == 0.25 and restored[1].clip == 5.0
    assert restored.observation_space == gym.spaces.Box(-5.0, 5.0, (4,), np.float32)
    # set_state folds the saved delta into the shared statistics: the totals are what must match.
    saved = pipeline.get_state()["1_MeanStdFilter"]
    shared = restored.get_state()["1_MeanStdFilter"]["shared"]
    assert shared["count"] == saved["delta"]["count"] == 12
    np.testing.assert_array_equal(shared["mean"], saved["delta"]["mean"])
    np.testing.assert_array_equal(shared["var"], saved["delta"]["var"])
    obs = np.ones((2, 4))
    np.testing.assert_array_equal(restored[1].normalize(obs), pipeline[1].normalize(obs))


def test_piece_with_a_non_plain_argument_fails_the_save(tmp_path):
    pipeline = ConnectorPipelineV2(*SPACES, connectors=[FnPiece(fn=lambda obs: obs)])
    with pytest.raises(
        CheckpointError,
        match=r"Cannot save FnPiece \(at ConnectorPipelineV2/0_FnPiece\): its constructor argument fn is .*<lambda>, "
        r"defined inside a function or as a lambda",
    ):
        pipeline.save_to_path(tmp_path / "pipeline")
    assert not (tmp_path / "pipeline").exists()


def test_env_runner_round_trip(tmp_path):
    config = (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 4})
        .env_runners(
            num_envs_per_env_runner=2, env_to_module_connector=lambda env, spaces, device: MeanStdFilter()
        )
        .debugging(seed=0)
    )
    runner = SingleAgentEnvRunner(config=config)
    runner.sample(num_timesteps=10)
    runner.set_state({"rl_module": runner.module.get_state(), "weights_seq_no": 7})
    path = runner.save_to_path(tmp_path / "runner")
    assert sorted(d for d in os.listdir(path) if "." not in d and d != "checkpoint_complete") == [
        "env_to_module_connector",
        "module_to_env_connector",
        "rl_module",
    ]
    restored = SingleAgentEnvRunner.from_checkpoint(path, trusted=True)  # the config holds a lambda
    state = restored.get_state()
    assert state["weights_seq_no"] == 7
    assert restored.module.inference_only is True
    assert_states_equal(state["rl_module"], runner.get_state()["rl_module"])
    shared = state["env_to_module_connector"]["0_MeanStdFilter"]["shared"]
    delta = runner.get_state()["env_to_module_connector"]["0_MeanStdFilter"]["delta"]
    assert shared["count"] == delta["count"] == 14  # 2 resets, 10 steps, 2 final observations
    np.testing.assert_array_equal(shared["mean"], delta["mean"])
    runner.stop()
    restored.stop()
