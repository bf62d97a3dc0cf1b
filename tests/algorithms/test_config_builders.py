"""What runners and learners build from a config: the module spec and the three connector pipelines."""

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

from flywheel import AlgorithmConfig, PPOConfig
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
from flywheel.errors import ConnectorError

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Discrete(2)
OTHER_OBS = gym.spaces.Box(0.0, 1.0, (5,), np.float32)
FAKE_ENV = SimpleNamespace(single_observation_space=OBS, single_action_space=ACT)


class Piece(ConnectorV2):
    """A stand-in piece that only carries a label."""

    def __init__(self, label, input_observation_space=None, input_action_space=None, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.label = label

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        return batch


def _labels(pipeline):
    return [getattr(piece, "label", type(piece).__name__) for piece in pipeline.connectors]


class _FakeModule:
    pass


class _OtherModule:
    pass


class _WithDefaultModelConfig(AlgorithmConfig):
    def get_default_rl_module_spec(self):
        return RLModuleSpec(module_class=_FakeModule, model_config={"fcnet_hiddens": [64], "a": 1})


# ---- module spec ----------------------------------------------------------------------------


def test_ppo_default_spec_with_spaces():
    from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule

    config = PPOConfig().rl_module(model_config={"fcnet_hiddens": [8]})
    spec = config.get_rl_module_spec(spaces=(OBS, ACT))
    assert spec == RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=OBS,
        action_space=ACT,
        model_config={"fcnet_hiddens": [8]},
    )
    assert spec.model_config is not config.model_config


def test_model_config_merges_default_then_config_then_user_spec():
    user = RLModuleSpec(model_config={"a": 3, "hidden": 16})
    config = _WithDefaultModelConfig().rl_module(
        rl_module_spec=user, model_config={"a": 2, "fcnet_hiddens": [8]}
    )
    spec = config.get_rl_module_spec(spaces=(OBS, ACT))
    assert spec.module_class is _FakeModule
    assert spec.model_config == {"fcnet_hiddens": [8], "a": 3, "hidden": 16}
    assert user.model_config == {"a": 3, "hidden": 16} and config.model_config == {
        "a": 2,
        "fcnet_hiddens": [8],
    }


def test_user_spec_fields_that_are_not_none_win():
    user = RLModuleSpec(module_class=_OtherModule, observation_space=OTHER_OBS, inference_only=True)
    spec = _WithDefaultModelConfig().rl_module(rl_module_spec=user).get_rl_module_spec()
    assert (spec.module_class, spec.observation_space, spec.action_space) == (_OtherModule, OTHER_OBS, None)
    assert spec.inference_only is True
    assert spec.model_config == {"fcnet_hiddens": [64], "a": 1}


def test_spaces_argument_beats_environment_settings_beat_spec_spaces():
    user = RLModuleSpec(observation_space=OTHER_OBS, action_space=ACT)
    config = _WithDefaultModelConfig().rl_module(rl_module_spec=user)
    assert config.get_rl_module_spec().observation_space == OTHER_OBS
    config.environment(observation_space=OBS)
    assert (config.get_rl_module_spec().observation_space, config.get_rl_module_spec().action_space) == (
        OBS,
        ACT,
    )
    other_act = gym.spaces.Discrete(7)
    assert config.get_rl_module_spec(spaces=(OTHER_OBS, other_act)).action_space == other_act


def test_multi_rl_module_spec_contributes_the_sub_spec_of_the_module_id():
    multi = MultiRLModuleSpec(
        rl_module_specs={
            "p0": RLModuleSpec(model_config={"h": 0}),
            "p1": RLModuleSpec(module_class=_OtherModule),
        }
    )
    config = _WithDefaultModelConfig().rl_module(rl_module_spec=multi)
    assert config.get_rl_module_spec(module_id="p0").model_config == {"fcnet_hiddens": [64], "a": 1, "h": 0}
    assert config.get_rl_module_spec(module_id="p1").module_class is _OtherModule
    assert config.get_rl_module_spec().module_class is _FakeModule  # no sub-spec for default_policy


def test_api_custom_module_spec_builds():
    import torch

    from flywheel import Columns, TorchRLModule, ValueFunctionAPI

    class TinyActorCritic(TorchRLModule, ValueFunctionAPI):
        def setup(self):
            hidden = self.model_config.get("hidden", 32)
            self.pi = torch.nn.Linear(self.observation_space.shape[0], hidden)

        def _forward(self, batch, **kwargs):
            return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

        def compute_values(self, batch, embeddings=None):
            return batch[Columns.OBS].sum(-1)

    config = PPOConfig().rl_module(
        rl_module_spec=RLModuleSpec(module_class=TinyActorCritic, model_config={"hidden": 16})
    )
    module = config.get_rl_module_spec(spaces=(OBS, ACT)).build()
    assert isinstance(module, TinyActorCritic) and module.pi.out_features == 16


# ---- connector pipelines (stand-in defaults) -------------------------------------------------


@pytest.fixture
def standin_defaults(monkeypatch):
    """Replaces the three default-piece lists with labelled stand-ins and records their arguments."""
    import flywheel.connectors.env_to_module as e2m
    import flywheel.connectors.learner as learner
    import flywheel.connectors.module_to_env as m2e

    calls = {}

    def fake(name, labels):
        def defaults(**kwargs):
            calls[name] = kwargs
            return [Piece(label) for label in labels]

        return defaults

    monkeypatch.setattr(
        e2m, "default_env_to_module_connectors", fake("e2m", ["e2m-default-1", "e2m-default-2"])
    )
    monkeypatch.setattr(
        m2e, "default_module_to_env_connectors", fake("m2e", ["m2e-default-1", "m2e-default-2"])
    )
    monkeypatch.setattr(learner, "default_learner_connectors", fake("learner", ["learner-default"]))
    return calls


def test_env_to_module_user_pieces_run_before_the_defaults(standin_defaults):
    seen = []

    def hook(env, spaces, device):
        seen.append((env, spaces, device))
        return [Piece("user-1"), Piece("user-2")]

    config = AlgorithmConfig().env_runners(env_to_module_connector=hook)
    pipeline = config.build_env_to_module_connector(FAKE_ENV, device="cpu")
    assert isinstance(pipeline, ConnectorPipelineV2)
    assert _labels(pipeline) == ["user-1", "user-2", "e2m-default-1", "e2m-default-2"]
    # RLlib's `spaces`: the vector env's (here the env has only single spaces) and one env's.
    spaces = {"__env__": (OBS, ACT), "__env_single__": (OBS, ACT)}
    assert seen == [(FAKE_ENV, spaces, "cpu")] and standin_defaults["e2m"] == {"device": "cpu"}
    assert (pipeline.input_observation_space, pipeline.input_action_space) == (OBS, ACT)
    config.env_runners(add_default_connectors_to_env_to_module_pipeline=False)
    assert _labels(config.build_env_to_module_connector(FAKE_ENV)) == ["user-1", "user-2"]


def test_hook_results_are_flattened(standin_defaults):
    config = AlgorithmConfig().env_runners(add_default_connectors_to_env_to_module_pipeline=False)
    results = {
        "piece": Piece("a"),
        "tuple": (Piece("a"), Piece("b")),
        "pipeline": ConnectorPipelineV2(connectors=[Piece("a"), Piece("b")]),
    }
    expected = {"piece": ["a"], "tuple": ["a", "b"], "pipeline": ["a", "b"]}
    for name, result in results.items():
        config.env_runners(env_to_module_connector=lambda env, spaces, device, r=result: r)
        assert _labels(config.build_env_to_module_connector(FAKE_ENV)) == expected[name], name
    assert _labels(AlgorithmConfig().build_env_to_module_connector(FAKE_ENV)) == [
        "e2m-default-1",
        "e2m-default-2",
    ]


def test_bad_hook_result_names_the_hook(standin_defaults):
    config = AlgorithmConfig().env_runners(env_to_module_connector=lambda env, spaces, device: None)
    with pytest.raises(
        ConnectorError,
        match=r"^config.env_to_module_connector returned None; expected a ConnectorV2 piece, a list of pieces "
        r"or a ConnectorPipelineV2. Fix: make the function return its piece\(s\).$",
    ):
        config.build_env_to_module_connector(FAKE_ENV)


def test_module_to_env_defaults_run_first_with_action_settings(standin_defaults):
    seen = []

    def hook(env, spaces):
        seen.append((env, spaces))
        return Piece("user")

    config = AlgorithmConfig().environment(normalize_actions=False, clip_actions=True)
    config.env_runners(module_to_env_connector=hook)
    pipeline = config.build_module_to_env_connector(FAKE_ENV, spaces=(OTHER_OBS, ACT))
    assert _labels(pipeline) == ["m2e-default-1", "m2e-default-2", "user"]
    assert standin_defaults["m2e"] == {"normalize_actions": False, "clip_actions": True}
    assert seen == [(FAKE_ENV, {"__env__": (OTHER_OBS, ACT), "__env_single__": (OTHER_OBS, ACT)})]
    assert pipeline.input_observation_space == OTHER_OBS
    config.env_runners(add_default_connectors_to_module_to_env_pipeline=False)
    assert _labels(config.build_module_to_env_connector(FAKE_ENV)) == ["user"]


def test_learner_user_pieces_then_defaults(standin_defaults):
    seen = []

    def hook(obs_space, act_space):
        seen.append((obs_space, act_space))
        return [Piece("user")]

    config = AlgorithmConfig().learners(learner_connector=hook)
    pipeline = config.build_learner_connector(OBS, ACT)
    assert _labels(pipeline) == ["user", "learner-default"] and seen == [(OBS, ACT)]
    assert (pipeline.input_observation_space, pipeline.input_action_space) == (OBS, ACT)
    config.learners(add_default_connectors_to_learner_pipeline=False)
    assert _labels(config.build_learner_connector(OBS, ACT)) == ["user"]


def test_ppo_learner_pipeline_wraps_defaults_with_bootstrap_and_gae(standin_defaults):
    config = (
        PPOConfig().training(gamma=0.9, lambda_=0.8).learners(learner_connector=lambda o, a: Piece("user"))
    )
    pipeline = config.build_learner_connector(OBS, ACT)
    assert _labels(pipeline) == [
        "AddOneTsToEpisodesAndTruncate",
        "user",
        "learner-default",
        "GeneralAdvantageEstimation",
    ]
    gae = pipeline.connectors[-1]
    assert (gae.gamma, gae.lambda_) == (0.9, 0.8)
    assert config.training(use_gae=False).build_learner_connector(OBS, ACT).connectors[-1].lambda_ == 1.0
    config.learners(add_default_connectors_to_learner_pipeline=False)
    assert _labels(config.build_learner_connector(OBS, ACT)) == ["user"]


# ---- connector pipelines (the real defaults) -------------------------------------------------


def test_real_default_pipelines():
    config = PPOConfig().env_runners(env_to_module_connector=lambda env, spaces, device: Piece("user"))
    assert _labels(config.build_env_to_module_connector(FAKE_ENV)) == [
        "user",
        "AddObservationsFromEpisodesToBatch",
        "AddStatesFromEpisodesToBatch",
        "BatchIndividualItems",
        "AddTimeDimToBatchAndZeroPad",
        "NumpyToTensor",
    ]
    assert _labels(config.build_module_to_env_connector(FAKE_ENV)) == [
        "GetActions",
        "TensorToNumpy",
        "RemoveSingleTsTimeRankFromBatch",
        "NormalizeAndClipActions",
    ]
    assert _labels(config.build_learner_connector(OBS, ACT)) == [
        "AddOneTsToEpisodesAndTruncate",
        "AddObservationsFromEpisodesToBatch",
        "AddColumnsFromEpisodesToTrainBatch",
        "AddTimeDimToBatchAndZeroPad",
        "BatchIndividualItems",
        "NumpyToTensor",
        "GeneralAdvantageEstimation",
    ]


# ---- the modules learners and runners build from a user's MultiRLModuleSpec --------------------


def test_learners_build_every_module_of_the_users_spec_in_its_container_class():
    from flywheel import MultiRLModule, MultiRLModuleSpec, RLModuleSpec
    from flywheel.algorithms.config_builders import single_agent_learner_spec
    from flywheel.env_runners.multi_agent_modules import multi_rl_module_spec

    class Container(MultiRLModule):
        pass

    box, act = gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(2)
    single = PPOConfig().rl_module(
        rl_module_spec=MultiRLModuleSpec(
            multi_rl_module_class=Container,
            rl_module_specs={"default_policy": RLModuleSpec(), "extra": RLModuleSpec(learner_only=True)},
        )
    )
    spec = single_agent_learner_spec(single, (box, act))
    assert spec.multi_rl_module_class is Container and list(spec.rl_module_specs) == [
        "default_policy",
        "extra",
    ]
    assert spec["extra"].learner_only and spec["extra"].observation_space == box  # the policy's spaces
    multi = (
        PPOConfig()
        .environment("CartPole-v1")
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda aid, *a, **kw: "p0")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                multi_rl_module_class=Container,
                rl_module_specs={
                    "p0": RLModuleSpec(),
                    "shared": RLModuleSpec(observation_space=box, action_space=act),
                },
            )
        )
    )
    multi.validate()  # a custom container may hold modules no agent maps to
    spec = multi_rl_module_spec(multi, {"p0": (box, act)})
    assert spec.multi_rl_module_class is Container and list(spec.rl_module_specs) == ["p0", "shared"]
    assert type(spec.build()) is Container
