"""Algorithm checkpoints: exact round trip, training continuity, one-module restore, config fallbacks."""

import dataclasses
import json
import os

import numpy as np
import pytest
import torch
from torch import nn

from flywheel import Algorithm, Columns, PPOConfig, RLModuleSpec, TorchRLModule, ValueFunctionAPI
from flywheel.checkpoints import io
from flywheel.connectors.env_to_module import MeanStdFilter
from flywheel.errors import CheckpointError
from flywheel.testing import CountingEnv

from .conftest import assert_states_equal

MODULE = "learner_group/learner/rl_module/default_policy"


def _counting_config(seed=0, **kwargs):
    return (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 6})
        .env_runners(num_envs_per_env_runner=2, **kwargs)
        .training(train_batch_size_per_learner=40, minibatch_size=20, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=seed)
    )


@pytest.fixture
def algos():
    built = []
    yield built
    for algo in built:
        algo.stop()


def _build(algos, config):
    algo = config.build_algo()
    algos.append(algo)
    return algo


def _restore(algos, path, **kwargs):
    algo = Algorithm.from_checkpoint(path, **kwargs)
    algos.append(algo)
    return algo


def test_layout(algos, tmp_path):
    algo = _build(algos, _counting_config())
    algo.train()
    path = algo.save_to_path(tmp_path / "ckpt")
    components = {
        os.path.relpath(root, path) for root, _, files in os.walk(path) if io.COMPLETE_MARKER in files
    }
    assert components == {
        ".",
        "learner_group",
        "learner_group/learner",
        "learner_group/learner/rl_module",
        MODULE,
        "env_runner",
        "env_runner/rl_module",
        "env_runner/env_to_module_connector",
        "env_runner/env_to_module_connector/0_AddObservationsFromEpisodesToBatch",
        "env_runner/env_to_module_connector/1_AddStatesFromEpisodesToBatch",
        "env_runner/env_to_module_connector/2_BatchIndividualItems",
        "env_runner/env_to_module_connector/3_AddTimeDimToBatchAndZeroPad",
        "env_runner/env_to_module_connector/4_NumpyToTensor",
        "env_runner/module_to_env_connector",
        "env_runner/module_to_env_connector/0_GetActions",
        "env_runner/module_to_env_connector/1_TensorToNumpy",
        "env_runner/module_to_env_connector/2_RemoveSingleTsTimeRankFromBatch",
        "env_runner/module_to_env_connector/3_NormalizeAndClipActions",
    }
    metadata = json.loads((tmp_path / "ckpt" / "metadata.json").read_text())
    assert metadata["class"] == "flywheel.algorithms.ppo.ppo:PPO"
    assert metadata["ctor_kwargs"]["config"]["__config__"] == "flywheel.algorithms.ppo.config:PPOConfig"
    assert metadata["ctor_kwargs"]["config"]["settings"]["env"] == {
        "__import__": "flywheel.testing.envs:CountingEnv"
    }
    # A config of plain values and importable classes needs no pickle.
    assert not (tmp_path / "ckpt" / io.PICKLE_FILE).exists()


def test_round_trip_is_exact(algos, tmp_path):
    algo = _build(algos, _counting_config())
    for _ in range(2):
        algo.train()
    state = algo.get_state()
    path = algo.save_to_path(tmp_path / "ckpt")
    restored = _restore(algos, path)
    restored_state = restored.get_state()
    assert_states_equal(restored_state["learner_group"], state["learner_group"])
    assert_states_equal(restored_state["env_runner"], state["env_runner"])
    assert_states_equal(restored_state["metrics"], state["metrics"])
    assert_states_equal(restored_state["rng"], state["rng"])
    assert (restored_state["training_iteration"], restored_state["time_total_s"]) == (
        2,
        state["time_total_s"],
    )
    assert restored.learner_group.weights_seq_no == restored.env_runner.weights_seq_no == 2
    assert restored.config.to_dict() == algo.config.to_dict() and restored.config.is_frozen
    # The generators continue from the saved states.
    draws = torch.rand(3).tolist(), np.random.rand(3).tolist()
    torch.set_rng_state(torch.from_numpy(state["rng"]["torch"]))
    np.random.set_state(state["rng"]["numpy"])
    assert draws == (torch.rand(3).tolist(), np.random.rand(3).tolist())


def test_get_state_selects_components_and_keys(algos):
    algo = _build(algos, _counting_config())
    assert algo.get_state(components="training_iteration") == {"training_iteration": 0}
    state = algo.get_state(components=["learner_group/learner/weights_seq_no", "env_runner"])
    assert list(state) == ["learner_group", "env_runner"]
    assert state["learner_group"] == {"learner": {"weights_seq_no": 0}}
    assert list(algo.get_state(not_components=["learner_group", "env_runner", "metrics", "rng"])) == [
        "training_iteration",
        "time_total_s",
    ]


def test_training_continues_after_restore(algos, tmp_path):
    """CartPole with a small net: the restored algorithm keeps counting and keeps its return level."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4)
        .training(lr=1e-3, train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .reporting(metrics_num_episodes_for_smoothing=10)
        .debugging(seed=0)
    )
    algo = _build(algos, config)
    first = algo.train()["env_runners"]["episode_return_mean"]
    for _ in range(5):
        before = algo.train()
    assert before["training_iteration"] == 6
    assert before["env_runners"]["episode_return_mean"] > first + 10  # it learned something worth keeping
    path = algo.save_to_path(tmp_path / "ckpt")
    algo.stop()
    algos.remove(algo)

    after = _restore(algos, path).train()
    assert after["training_iteration"] == 7
    assert (
        after["env_runners"]["num_env_steps_sampled_lifetime"]
        == after["num_env_steps_sampled_lifetime"]
        == 7000
    )
    assert after["learners"]["__all_modules__"]["weights_seq_no"] == 7
    assert after["time_total_s"] > before["time_total_s"]
    # Only episodes sampled after the restore are in the 10-episode window.
    assert after["env_runners"]["episode_return_mean"] >= 0.8 * before["env_runners"]["episode_return_mean"]
    assert after["env_runners"]["episode_return_mean"] > first + 10


class _Tiny(TorchRLModule, ValueFunctionAPI):
    def setup(self):
        self.pi = nn.Linear(self.observation_space.shape[0], self.action_space.n)
        self.vf = nn.Linear(self.observation_space.shape[0], 1)

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_values(self, batch, embeddings=None):
        return self.vf(batch[Columns.OBS]).squeeze(-1)


def test_config_lambdas_and_local_classes_go_to_a_pickle_file(algos, tmp_path):
    class LocalModule(_Tiny):
        pass

    connector = lambda env, spaces, device: MeanStdFilter(clip=4.0)  # noqa: E731
    config = _counting_config(env_to_module_connector=connector)
    config.rl_module(rl_module_spec=RLModuleSpec(module_class=LocalModule))
    algo = _build(algos, config)
    algo.train()
    path = algo.save_to_path(tmp_path / "ckpt")
    assert (tmp_path / "ckpt" / io.PICKLE_FILE).exists()
    settings = json.loads((tmp_path / "ckpt" / "metadata.json").read_text())["ctor_kwargs"]["config"][
        "settings"
    ]
    assert settings["env_to_module_connector"] == {"__pickled__": 0}
    assert settings["rl_module_spec"]["fields"]["module_class"] == {"__pickled__": 1}
    with pytest.raises(
        CheckpointError,
        match=r"ckpt/metadata\.json stores config\.env_to_module_connector, config\.rl_module_spec\.module_class as "
        r"pickles \(lambdas, closures, or classes defined in __main__ or inside a function\)\. Flywheel unpickles only "
        r"when told the checkpoint is trusted, because unpickling runs code the file chooses\. Fix: if you trust this "
        r"checkpoint, Algorithm\.from_checkpoint\(path, trusted=True\)\. Or pass those settings yourself: "
        r"Algorithm\.from_checkpoint\(path, config=\{'env_to_module_connector': \.\.\., 'rl_module_spec': \.\.\.\}\); "
        r"or build the algorithm from your own config and load only the states: algo = config\.build_algo\(\); "
        r"algo\.restore_from_path\(path\)\.$",
    ):
        Algorithm.from_checkpoint(path)
    expected = algo.env_runner.get_state()["env_to_module_connector"]["0_MeanStdFilter"]
    trusted = _restore(algos, path, trusted=True)
    given = _restore(
        algos,
        path,
        config={
            "env_to_module_connector": connector,
            "rl_module_spec": RLModuleSpec(module_class=LocalModule),
        },
    )
    for restored in (trusted, given):
        assert type(restored.env_runner.module).__name__ == "LocalModule"
        filter_state = restored.env_runner.get_state()["env_to_module_connector"]["0_MeanStdFilter"]["shared"]
        assert filter_state["count"] == expected["shared"]["count"] + expected["delta"]["count"] == 48
        assert restored.env_runner.env_to_module[0].clip == 4.0
        assert restored.iteration == 1
        restored.train()


def test_a_whole_config_can_replace_the_saved_one(algos, tmp_path):
    algo = _build(algos, _counting_config())
    algo.train()
    path = algo.save_to_path(tmp_path / "ckpt")
    restored = _restore(algos, path, config=_counting_config().training(lr=1e-2))
    assert restored.config.lr == 1e-2 and restored.iteration == 1
    with pytest.raises(TypeError, match=r"unexpected key 'lrr'\. Did you mean 'lr'\?"):
        Algorithm.from_checkpoint(path, config={"lrr": 0.1})


def test_restore_one_module_into_another_algorithm(algos, tmp_path):
    source = _build(algos, _counting_config(seed=1))
    source.train()
    path = source.save_to_path(tmp_path / "ckpt")
    loaded = []
    target = _build(
        algos, _counting_config(seed=2).callbacks(on_checkpoint_loaded=lambda **kw: loaded.append(1))
    )
    target.train()
    target.restore_from_path(os.path.join(path, *MODULE.split("/")), component=MODULE)
    expected = source.learner_group.get_weights(inference_only=False)["default_policy"]
    assert_states_equal(target.learner_group.get_weights(inference_only=False)["default_policy"], expected)
    assert_states_equal(
        target.env_runner.module.get_state(),
        source.learner_group.get_weights(inference_only=True)["default_policy"],
    )
    assert target.env_runner.weights_seq_no == target.learner_group.weights_seq_no == 1
    assert loaded == [1]


def test_a_checkpoint_of_the_wrong_kind_is_never_restored_silently(algos, tmp_path):
    algo = _build(algos, _counting_config())
    path = algo.save_to_path(tmp_path / "ckpt")
    before = algo.get_state(components="learner_group")
    module_path = os.path.join(path, *MODULE.split("/"))
    with pytest.raises(
        CheckpointError,
        match=rf"Cannot restore {module_path} into PPO: it holds DefaultPPOTorchRLModule \(kind RLModule\), expected "
        r"a checkpoint of kind Algorithm\. Fix: pass the component it belongs to, e\.g\. restore_from_path\(path, "
        r"component='learner_group/learner/rl_module/default_policy'\) \(components of kind RLModule: "
        r"\['learner_group/learner/rl_module/default_policy', 'env_runner/rl_module'\]\)\.$",
    ):
        algo.restore_from_path(module_path)
    with pytest.raises(
        CheckpointError,
        match=rf"Cannot restore {path} into PPO's component 'learner_group': it holds PPO \(kind Algorithm\), "
        rf"expected a checkpoint of kind LearnerGroup\. Fix: pass the sub-directory that holds it: {path}/learner_group\.$",
    ):
        algo.restore_from_path(path, component="learner_group")
    with pytest.raises(CheckpointError, match=r"expected a checkpoint of kind MultiRLModule"):
        algo.restore_from_path(module_path, component="learner_group/learner/rl_module")
    assert_states_equal(algo.get_state(components="learner_group"), before)


def test_restoring_an_older_checkpoint_rolls_the_runner_back(algos, tmp_path):
    algo = _build(algos, _counting_config())
    algo.train()
    path = algo.save_to_path(tmp_path / "ckpt")
    saved = algo.learner_group.get_weights(inference_only=True)["default_policy"]
    algo.train()
    algo.restore_from_path(path)
    assert algo.env_runner.weights_seq_no == algo.learner_group.weights_seq_no == 1
    assert_states_equal(algo.env_runner.module.get_state(), saved)
    assert algo.iteration == 1


def test_bad_paths_raise_checkpoint_errors(algos, tmp_path):
    algo = _build(algos, _counting_config())
    path = algo.save_to_path(tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match=r"is not a flywheel checkpoint: it has no metadata\.json"):
        Algorithm.from_checkpoint(tmp_path)
    with pytest.raises(
        CheckpointError,
        match=r"default_policy holds flywheel\.algorithms\.ppo\.rl_module:DefaultPPOTorchRLModule \(kind RLModule\), "
        r"which is not Algorithm or a subclass of it\. Fix: load it with "
        r"DefaultPPOTorchRLModule\.from_checkpoint\(\)\.$",
    ):
        Algorithm.from_checkpoint(os.path.join(path, *MODULE.split("/")))
    with pytest.raises(CheckpointError, match=r"PPO has no component 'learner_group/learner/rl_module/p9'"):
        algo.restore_from_path(path, component="learner_group/learner/rl_module/p9")
    os.remove(os.path.join(path, "learner_group", "learner", io.COMPLETE_MARKER))
    with pytest.raises(CheckpointError, match=r"ckpt/learner_group/learner is incomplete"):
        Algorithm.from_checkpoint(path)


def test_a_failed_save_keeps_the_previous_checkpoint(algos, tmp_path, monkeypatch):
    algo = _build(algos, _counting_config())
    algo.train()
    path = algo.save_to_path(tmp_path / "ckpt")
    weights = algo.learner_group.get_weights()["default_policy"]
    algo.train()
    write_state = io.write_state

    def failing(directory, state, owner):
        if owner.endswith("env_runner"):
            raise OSError("no space left on device")
        return write_state(directory, state, owner)

    monkeypatch.setattr(io, "write_state", failing)
    with pytest.raises(
        CheckpointError,
        match=rf"Cannot save a checkpoint to {path}: no space left on device\. The "
        rf"previous checkpoint at {path} is unchanged\.",
    ):
        algo.save_to_path(path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["ckpt"]
    restored = _restore(algos, path)
    assert restored.iteration == 1
    assert_states_equal(restored.learner_group.get_weights()["default_policy"], weights)
    assert not np.array_equal(
        next(iter(weights.values())), next(iter(algo.learner_group.get_weights()["default_policy"].values()))
    )


def test_a_config_class_defined_in_a_function_is_pickled_whole_and_loads_when_trusted(tmp_path):
    @dataclasses.dataclass(init=False, repr=False, eq=True)
    class LocalConfig(PPOConfig):
        pass

    algo = (
        LocalConfig().environment(CountingEnv).training(train_batch_size=20, minibatch_size=10).build_algo()
    )
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
    finally:
        algo.stop()
    with pytest.raises(
        CheckpointError,
        match=r"ckpt/metadata\.json holds its config as a pickle, not as settings: the config's class could "
        r"not be imported where the checkpoint was saved \(it was defined inside a function, or in code run by "
        r"exec\)\. Fix: if you trust the checkpoint, Algorithm\.from_checkpoint\(path, trusted=True\); ",
    ):
        Algorithm.from_checkpoint(path)
    restored = Algorithm.from_checkpoint(path, trusted=True)
    try:
        assert type(restored.config).__name__ == "LocalConfig" and restored.iteration == 1
        assert restored.config.train_batch_size == 20
    finally:
        restored.stop()
