import gymnasium as gym
import pytest
import torch
from torch import nn

from flywheel import Columns, RLModule, RLModuleSpec, TorchRLModule, ValueFunctionAPI
from flywheel.core.distributions import Categorical, DiagGaussian, MultiCategorical
from flywheel.errors import ModuleError

OBS = gym.spaces.Box(-1.0, 1.0, (4,))
ACT = gym.spaces.Discrete(2)


class TinyActorCritic(TorchRLModule, ValueFunctionAPI):
    """The module of API.md §3, verbatim."""

    def setup(self):
        hidden = self.model_config.get("hidden", 32)
        n_obs = self.observation_space.shape[0]
        self.pi = nn.Sequential(nn.Linear(n_obs, hidden), nn.Tanh(), nn.Linear(hidden, self.action_space.n))
        self.vf = nn.Sequential(nn.Linear(n_obs, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_values(self, batch, embeddings=None):
        return self.vf(batch[Columns.OBS]).squeeze(-1)


class PhaseModule(TorchRLModule):
    """Records which phase method ran, and in which torch mode."""

    def setup(self):
        self.layer = nn.Linear(2, 2)
        self.calls = []

    def _forward_inference(self, batch, **kwargs):
        self.calls.append(("inference", self.training, torch.is_grad_enabled(), kwargs))
        return {}

    def _forward_exploration(self, batch, **kwargs):
        self.calls.append(("exploration", self.training, torch.is_grad_enabled(), kwargs))
        return {}

    def _forward_train(self, batch, **kwargs):
        self.calls.append(("train", self.training, torch.is_grad_enabled(), kwargs))
        return {}


def test_api_tiny_actor_critic_builds_and_forwards():
    module = RLModuleSpec(
        module_class=TinyActorCritic, observation_space=OBS, action_space=ACT, model_config={"hidden": 16}
    ).build()
    assert module.pi[0].out_features == 16
    batch = {Columns.OBS: torch.zeros(5, 4)}
    out = module.forward_exploration(batch, t=3)
    assert out[Columns.ACTION_DIST_INPUTS].shape == (5, 2)
    assert not out[Columns.ACTION_DIST_INPUTS].requires_grad
    train_out = module.forward_train(batch)
    assert train_out[Columns.ACTION_DIST_INPUTS].requires_grad
    assert module.compute_values(batch).shape == (5,)
    assert module.get_exploration_action_dist_cls() is Categorical
    assert not module.is_stateful()


def test_constructor_stores_arguments_and_calls_setup():
    module = PhaseModule(OBS, ACT, inference_only=True, model_config={"a": 1})
    assert (module.observation_space, module.action_space, module.inference_only) == (OBS, ACT, True)
    assert module.model_config == {"a": 1}
    assert PhaseModule().model_config == {}
    assert isinstance(module, RLModule) and isinstance(module, nn.Module)


def test_phases_dispatch_with_modes_and_grad():
    module = PhaseModule(OBS, ACT)
    module.forward_train({})
    module.forward_exploration({}, t=7)
    module.forward_inference({})
    module.forward_train({})
    assert module.calls == [
        ("train", True, True, {}),
        ("exploration", False, False, {"t": 7}),
        ("inference", False, False, {}),
        ("train", True, True, {}),
    ]


def test_mode_is_not_switched_when_already_right(monkeypatch):
    module = PhaseModule(OBS, ACT)
    module.forward_exploration({})
    switches = []
    monkeypatch.setattr(module, "train", lambda mode=True: switches.append(mode))
    monkeypatch.setattr(module, "eval", lambda: switches.append("eval"))
    for _ in range(3):
        module.forward_exploration({})
        module.forward_inference({})
    assert switches == []


def test_forward_defaults_to_underscore_forward_in_every_phase():
    class One(TorchRLModule):
        def _forward(self, batch, **kwargs):
            return {"seen": batch["x"] + 1}

    module = One(OBS, ACT)
    for phase in (module.forward_inference, module.forward_exploration, module.forward_train):
        assert phase({"x": 1}) == {"seen": 2}


def test_module_without_forward_names_the_methods():
    module = TorchRLModule(OBS, ACT)
    with pytest.raises(
        NotImplementedError,
        match="TorchRLModule overrides none of _forward, _forward_inference, _forward_exploration, _forward_train",
    ):
        module.forward_inference({})


def test_default_distribution_classes_follow_the_action_space():
    assert TorchRLModule(OBS, gym.spaces.Box(-1, 1, (3,))).get_train_action_dist_cls() is DiagGaussian
    module = TorchRLModule(OBS, gym.spaces.MultiDiscrete([2, 5]))
    cls = module.get_inference_action_dist_cls()
    assert issubclass(cls, MultiCategorical) and cls.input_lens == (2, 5)
    assert module.get_exploration_action_dist_cls() is cls  # built once, cached
    with pytest.raises(ModuleError, match="TorchRLModule has no action_space"):
        TorchRLModule(OBS, None).get_inference_action_dist_cls()


def test_stateful_module():
    class Stateful(TorchRLModule):
        def get_initial_state(self):
            return {"h": torch.zeros(3)}

    assert Stateful(OBS, ACT).is_stateful()
    assert TorchRLModule(OBS, ACT).get_initial_state() == {}


def test_value_function_api_is_abstract():
    class NoValues(TorchRLModule, ValueFunctionAPI):
        pass

    with pytest.raises(TypeError, match="compute_values"):
        NoValues(OBS, ACT)


def test_base_rl_module_has_an_empty_state_as_in_rllib():
    module = RLModule(OBS, ACT)
    assert module.get_state() == {} and module.get_state(inference_only=True) == {}
    module.set_state({})
    assert "inference_only=False" in repr(module)


def test_rllib_constructor_keywords_and_attributes():
    module = TorchRLModule(
        observation_space=OBS, action_space=ACT, inference_only=None, learner_only=True, model_config=None
    )
    assert (module.inference_only, module.learner_only, module.catalog, module.action_dist_cls) == (
        False,
        True,
        None,
        None,
    )
    with pytest.raises(ModuleError, match=r"got \['catalog_class', 'foo'\], which flywheel's RLModule"):
        TorchRLModule(observation_space=OBS, action_space=ACT, catalog_class=object, foo=1)


def test_action_dist_cls_set_in_setup_serves_all_three_phases():
    class WithDist(TorchRLModule):
        def setup(self):
            self.action_dist_cls = DiagGaussian

    module = WithDist(OBS, ACT)
    assert module.get_inference_action_dist_cls() is DiagGaussian
    assert module.get_exploration_action_dist_cls() is DiagGaussian
    assert module.get_train_action_dist_cls() is DiagGaussian

    class InferenceOnly(TorchRLModule):
        def get_inference_action_dist_cls(self):
            return DiagGaussian

    module = InferenceOnly(OBS, ACT)
    assert module.get_train_action_dist_cls() is DiagGaussian  # defaults to the inference class, as RLlib


def test_docs_page_examples_run_in_order(run_doc_blocks):
    """docs/concepts/rl_modules.md: its code blocks continue one another, so they run in one namespace."""
    namespace = run_doc_blocks("docs/concepts/rl_modules.md", blocks=8)
    assert sorted(namespace["multi"].keys()) == ["p0", "p2"]


def test_acting_phases_restore_the_grad_mode_they_found():
    class Failing(TorchRLModule):
        def _forward(self, batch, **kwargs):
            raise RuntimeError("boom")

    module = PhaseModule(OBS, ACT)
    module.forward_exploration({})
    assert torch.is_grad_enabled()
    with pytest.raises(RuntimeError, match="boom"):
        Failing(OBS, ACT).forward_inference({})
    assert torch.is_grad_enabled()
    with torch.no_grad():
        module.forward_inference({})
        assert not torch.is_grad_enabled()
    assert module.calls == [("exploration", False, False, {}), ("inference", False, False, {})]
