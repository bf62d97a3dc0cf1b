"""A Learner driven by hand, as RLlib 2.60's docs and unit tests drive one: config.build_learner, the
gradient methods update() itself uses, add_module/remove_module with their optimizers, the optimizer
registry and optimizer state, update(batch=...)."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import Columns, Learner, MultiRLModuleSpec, PPOConfig, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.core.learner.torch_learner import TorchLearner
from flywheel.env import make_multi_agent
from flywheel.errors import ConfigError, LearnerError
from flywheel.typing import ALL_MODULES, DEFAULT_MODULE_ID

ENV = gym.make("CartPole-v1")
SMALL = {"fcnet_hiddens": [8]}


def config(**training):
    return PPOConfig().training(lr=0.0003, **training).rl_module(model_config=SMALL).debugging(seed=0)


def numpy(params):
    return [p.detach().numpy().copy() for p in params]


def test_compute_gradients_of_the_summed_weights_are_ones():
    learner = config().build_learner(env=ENV)
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    gradients = learner.compute_gradients({ALL_MODULES: sum(param.sum() for param in params)})
    assert isinstance(gradients, dict) and len(gradients) == len(params)
    assert all(learner.get_param_ref(p) in gradients for p in params)
    for grad in gradients.values():
        np.testing.assert_array_equal(grad.numpy(), np.ones(grad.shape))


@pytest.mark.parametrize(("clip", "by"), [(0.75, "value"), (1.0, "norm"), (5.0, "global_norm")])
def test_postprocess_gradients_clips_as_configured(clip, by):
    learner = config(grad_clip=clip, grad_clip_by=by).build_learner(env=ENV)
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    grads = {learner.get_param_ref(p): p.detach() + 1.0 for p in params}  # pretend gradients
    raw = [g.clone().numpy() for g in grads.values()]
    processed = [g.numpy() for g in learner.postprocess_gradients(grads).values()]
    if by == "value":
        assert all(g.max() <= clip and g.min() >= -clip for g in processed)
    elif by == "norm":
        for before, after in zip(raw, processed, strict=True):
            norm = np.sqrt(np.sum(before**2))
            np.testing.assert_allclose(after, before * min(1.0, clip / norm), rtol=1e-5)
    else:
        norm = np.sqrt(sum(np.sum(g**2) for g in raw))
        assert norm > clip
        for before, after in zip(raw, processed, strict=True):
            np.testing.assert_allclose(after, before * clip / norm, rtol=1e-5)


def test_apply_gradients_of_ones_moves_adam_by_lr_per_step():
    learner = config().build_learner(env=ENV)
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    expected = [p - 100 * learner.config.lr * np.ones(p.shape) for p in numpy(params)]
    for _ in range(100):
        learner.apply_gradients({learner.get_param_ref(p): torch.ones_like(p) for p in params})
    for param, want in zip(params, expected, strict=True):
        np.testing.assert_allclose(param.detach().numpy(), want, atol=1e-5)


def test_apply_gradients_skips_a_non_finite_step_when_driven_by_hand():
    learner = config().build_learner(env=ENV)
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    before = numpy(params)
    learner.apply_gradients({p: torch.full_like(p, float("nan")) for p in params})
    assert all(np.array_equal(a, p.detach().numpy()) for a, p in zip(before, params, strict=True))
    assert learner.get_state()["num_non_finite_updates"] == 1


def test_add_module_then_remove_the_default_one():
    base = config()
    learner = base.build_learner(env=ENV)
    spec = RLModuleSpec(DefaultPPOTorchRLModule, ENV.observation_space, ENV.action_space, model_config=SMALL)
    returned = learner.add_module(module_id="test", module_spec=spec)
    assert isinstance(returned, MultiRLModuleSpec) and set(returned.rl_module_specs) == {
        "default_policy",
        "test",
    }
    assert learner.config.policies == {"default_policy", "test"} and base.policies == {"default_policy"}
    assert learner.module["test"].inference_only is False
    returned = learner.remove_module(DEFAULT_MODULE_ID)
    assert set(learner.module.keys()) == {"test"} and set(returned.rl_module_specs) == {"test"}
    assert learner.get_optimizers_for_module(DEFAULT_MODULE_ID) == []
    assert [name for name, _ in learner.get_optimizers_for_module("test")] == ["default_optimizer"]

    params = learner.get_parameters(learner.module["test"])
    expected = [p - 100 * learner.config.lr * np.ones(p.shape) for p in numpy(params)]
    for _ in range(100):
        gradients = learner.compute_gradients({ALL_MODULES: sum(param.sum() for param in params)})
        learner.apply_gradients(gradients)
    for param, want in zip(params, expected, strict=True):
        np.testing.assert_allclose(param.detach().numpy(), want, atol=1e-5)


def test_add_module_sets_policies_to_train_and_refuses_config_overrides():
    learner = config().build_learner(env=ENV)
    spec = RLModuleSpec(DefaultPPOTorchRLModule, ENV.observation_space, ENV.action_space, model_config=SMALL)
    learner.add_module(module_id="frozen", module_spec=spec, new_should_module_be_updated=["default_policy"])
    assert (
        not learner.should_module_be_updated("frozen") and learner.get_optimizers_for_module("frozen") == []
    )
    with pytest.raises(
        ConfigError, match=r"add_module\(config_overrides=\{'lr': 0.1\}\): flywheel has no per-module"
    ):
        learner.add_module(module_id="other", module_spec=spec, config_overrides={"lr": 0.1})


def test_checkpoints_rebuild_added_and_removed_modules(tmp_path):
    learner = config().build_learner(env=ENV)
    spec = RLModuleSpec(DefaultPPOTorchRLModule, ENV.observation_space, ENV.action_space, model_config=SMALL)
    learner.add_module(module_id="test", module_spec=spec)
    restored = Learner.from_checkpoint(learner.save_to_path(tmp_path / "added"))
    assert set(restored.module.keys()) == {"default_policy", "test"}
    assert restored.get_state()["optimizer"].keys() == learner.get_state()["optimizer"].keys()
    learner.remove_module(module_id=DEFAULT_MODULE_ID)
    restored = Learner.from_checkpoint(learner.save_to_path(tmp_path / "removed"))
    assert set(restored.module.keys()) == {"test"}
    assert list(restored.get_state()["optimizer"]) == ["test_default_optimizer"]


def test_optimizer_state_is_rllibs_layout_and_round_trips_into_a_fresh_learner():
    learner = config().build_learner(env=ENV)
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    for _ in range(3):
        learner.apply_gradients({p: torch.ones_like(p) for p in params})
    state = learner.get_state(components="optimizer")
    entry = state["optimizer"]["default_policy_default_optimizer"]
    assert entry["module_id"] == "default_policy" and float(entry["state"]["state"][0]["step"]) == 3.0
    fresh = config().build_learner(env=ENV)
    fresh.set_state(state)
    moments = fresh.get_optimizer().state_dict()["state"][0]["exp_avg"]
    np.testing.assert_array_equal(moments.numpy(), entry["state"]["state"][0]["exp_avg"])
    fresh.set_state({"optimizer": {"gone_default_optimizer": {"module_id": "gone", "state": {}}}})  # skipped


def test_register_optimizer_keeps_the_optimizers_own_lr_unless_given_one():
    class TwoOptimizers(TorchLearner):
        def configure_optimizers_for_module(self, module_id, config=None):
            module = self.module[module_id]
            encoder, heads = list(module.encoder.parameters()), list(module.pi.parameters())
            self.register_optimizer(
                module_id=module_id,
                optimizer_name="enc",
                optimizer=torch.optim.SGD(encoder, lr=0.5),
                params=encoder,
            )
            self.register_optimizer(
                module_id=module_id, optimizer_name="pi", optimizer=torch.optim.SGD(heads), params=heads,
                lr_or_lr_schedule=[[0, 0.2], [100, 0.0]],
            )  # fmt: skip

        def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
            return fwd_out[Columns.ACTION_DIST_INPUTS].sum()

    learner = config().learners(learner_class=TwoOptimizers).build_learner(env=ENV)
    assert learner.get_optimizer(optimizer_name="enc").param_groups[0]["lr"] == 0.5
    assert learner.get_optimizer("default_policy", "pi").param_groups[0]["lr"] == 0.2
    assert learner.get_optimizer(optimizer_name="default_policy_pi") is learner.get_optimizer(
        "default_policy", "pi"
    )
    assert [name for name, _ in learner.get_optimizers_for_module("default_policy")] == ["enc", "pi"]
    grads = {p: torch.ones_like(p) for p in learner.get_parameters(learner.module[DEFAULT_MODULE_ID])}
    assert (
        len(learner.filter_param_dict_for_optimizer(grads, learner.get_optimizer(optimizer_name="pi"))) == 2
    )
    obs = np.zeros((4, 4), np.float32)
    results = learner.update(
        {"default_policy": {Columns.OBS: obs}}, timesteps={"num_env_steps_sampled_lifetime": 50}
    )
    assert results["default_policy"]["enc_learning_rate"] == 0.5
    assert results["default_policy"]["pi_learning_rate"] == pytest.approx(0.1)
    with pytest.raises(LearnerError, match=r"No optimizer 'vf' for module 'default_policy'; registered"):
        learner.get_optimizer(optimizer_name="vf")


def test_an_optimizer_registered_for_all_modules_steps_with_every_module():
    class Shared(TorchLearner):
        def configure_optimizers(self):
            params = list(self.module.parameters())
            self.register_optimizer(optimizer=torch.optim.SGD(params, lr=1.0), params=params)

        def configure_optimizers_for_module(self, module_id, config=None):
            raise AssertionError("configure_optimizers is overridden")

        def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
            return fwd_out[Columns.ACTION_DIST_INPUTS].sum()

    learner = config().learners(learner_class=Shared).build_learner(env=ENV)
    assert [name for name, _ in learner.get_optimizers_for_module()] == ["default_optimizer"]  # ALL_MODULES
    before = learner.module[DEFAULT_MODULE_ID].pi.weight.detach().clone()
    learner.update({"default_policy": {Columns.OBS: np.ones((2, 4), np.float32)}})
    assert not torch.equal(before, learner.module[DEFAULT_MODULE_ID].pi.weight)


def test_update_on_a_ready_batch():
    learner = config().build_learner(env=ENV)
    rows = 10
    batch = {
        "default_policy": {
            Columns.OBS: np.zeros((rows, 4), np.float32), Columns.ACTIONS: np.zeros(rows, np.int64),
            Columns.ACTION_LOGP: np.full(rows, np.log(0.5), np.float32),
            Columns.ACTION_DIST_INPUTS: np.zeros((rows, 2), np.float32),
            Columns.ADVANTAGES: np.ones(rows, np.float32), Columns.VALUE_TARGETS: np.ones(rows, np.float32),
        }
    }  # fmt: skip
    results = learner.update(batch=batch, num_epochs=2, minibatch_size=5)
    assert results["default_policy"]["num_module_steps_trained"] == 20
    assert results["__all_modules__"]["num_env_steps_trained"] == 20 and learner.weights_seq_no == 1
    assert learner.TOTAL_LOSS_KEY in results["default_policy"]
    with pytest.raises(LearnerError, match=r"module ids \['p9'\] that this learner does not have"):
        learner.update(batch={"p9": batch["default_policy"]})
    with pytest.raises(LearnerError, match="takes a batch or episodes, got both"):
        learner.update(batch=batch, episodes=[])
    with pytest.raises(LearnerError, match="takes a batch or episodes, got neither"):
        learner.update()


def test_update_runs_through_the_overridable_gradient_methods():
    """update() uses the public gradient methods: overriding one changes what update() does."""

    class NoSteps(type(config().build_learner(env=ENV))):
        def postprocess_gradients(self, gradients_dict):
            return {ref: torch.zeros_like(grad) for ref, grad in gradients_dict.items()}

    learner = config().learners(learner_class=NoSteps).build_learner(env=ENV)  # Adam: zero steps stay put
    before = {k: v.copy() for k, v in learner.get_weights(inference_only=False)["default_policy"].items()}
    obs = np.zeros((4, 4), np.float32)
    batch = {"default_policy": {
        Columns.OBS: obs, Columns.ACTIONS: np.zeros(4, np.int64), Columns.ACTION_LOGP: np.zeros(4, np.float32),
        Columns.ACTION_DIST_INPUTS: np.zeros((4, 2), np.float32), Columns.ADVANTAGES: np.ones(4, np.float32),
        Columns.VALUE_TARGETS: np.ones(4, np.float32),
    }}  # fmt: skip
    learner.update(batch=batch)
    after = learner.get_weights(inference_only=False)["default_policy"]
    assert all(np.array_equal(before[name], after[name]) for name in before)


def test_build_is_idempotent_and_a_ready_module_can_be_trained():
    learner = config().build_learner(env=ENV)
    module = learner.module
    learner.build()
    assert learner.module is module
    prebuilt = RLModuleSpec(
        DefaultPPOTorchRLModule, ENV.observation_space, ENV.action_space, model_config=SMALL
    ).build()
    own = type(learner)(config=config(), module=prebuilt)
    own.build()
    assert own.module[DEFAULT_MODULE_ID] is prebuilt and own.get_optimizer() is not None


def test_build_learner_takes_spaces_in_either_form_or_reads_the_config_env():
    box, discrete = gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(5)
    for spaces in ((box, discrete), {"default_policy": (box, discrete)}, {"__env_single__": (box, discrete)}):
        module = config().build_learner(spaces=spaces).module[DEFAULT_MODULE_ID]
        assert (module.observation_space, module.action_space) == (box, discrete)
    module = config().environment("CartPole-v1").build_learner().module[DEFAULT_MODULE_ID]
    assert module.observation_space == ENV.observation_space
    with pytest.raises(ConfigError, match="build_learner\\(\\) needs spaces for the module, but got no env"):
        config().build_learner()


def test_build_learner_for_a_multi_agent_config():
    env = make_multi_agent("CartPole-v1")({"num_agents": 2})
    multi = config().multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, ep, **kw: f"p{aid}")
    learner = multi.build_learner(env=env)
    assert set(learner.module.keys()) == {"p0", "p1"}
    learner = multi.build_learner(
        spaces={
            "p0": (ENV.observation_space, ENV.action_space),
            "p1": (ENV.observation_space, ENV.action_space),
        }
    )
    assert set(learner.module.keys()) == {"p0", "p1"}


def test_build_learner_group():
    group = config().build_learner_group(env=ENV)
    assert group.is_local and not group.is_remote and len(group) == 0
    assert group.foreach_learner(lambda learner: learner.module[DEFAULT_MODULE_ID].action_space) == [
        ENV.action_space
    ]
    spec = MultiRLModuleSpec(
        rl_module_specs={
            "only": RLModuleSpec(
                DefaultPPOTorchRLModule, ENV.observation_space, ENV.action_space, model_config=SMALL
            )
        }
    )
    group = config().multi_agent(policies={"only"}).build_learner_group(rl_module_spec=spec)
    assert group.foreach_learner(lambda learner: list(learner.module.keys())) == [["only"]]
    returned = group.add_module(module_id="extra", module_spec=spec["only"])
    assert set(returned.rl_module_specs) == {"only", "extra"}
    assert set(group.remove_module("extra").rl_module_specs) == {"only"}
    assert set(group.get_weights(["only"])) == {"only"}


def _self_supervised_module_class():
    """A module with its own loss (RLlib's SelfSupervisedLossAPI): the mean of a linear map of OBS."""
    from flywheel.core.rl_module import SelfSupervisedLossAPI, TorchRLModule

    class OwnLoss(TorchRLModule, SelfSupervisedLossAPI):
        def setup(self):
            self.net = torch.nn.Linear(4, 1)

        def _forward_train(self, batch, **kwargs):
            return {"z": self.net(batch[Columns.OBS])}

        def _forward(self, batch, **kwargs):
            raise NotImplementedError

        def compute_self_supervised_loss(self, *, learner, module_id, config, batch, fwd_out):
            learner.metrics.log_value((module_id, "seen_by_own_loss"), 1.0, window=1)
            return fwd_out["z"].mean()

    return OwnLoss


def test_a_module_with_its_own_loss_trains_next_to_ppos_and_needs_no_value_function():
    own = _self_supervised_module_class()
    spec = MultiRLModuleSpec(
        rl_module_specs={
            DEFAULT_MODULE_ID: RLModuleSpec(),
            "own": RLModuleSpec(module_class=own, learner_only=True),
        }
    )
    learner = config().rl_module(rl_module_spec=spec).build_learner(env=ENV)
    assert sorted(learner.module.keys()) == [DEFAULT_MODULE_ID, "own"]
    assert learner.rl_module_is_compatible(learner.module["own"])  # a torch module: TorchLearner trains it
    assert learner.rl_module_required_apis()[0].__name__ == "ValueFunctionAPI"
    batch = {Columns.OBS: torch.ones(5, 4)}
    fwd_out = learner.module.forward_train({"own": batch})
    losses = learner.compute_losses(fwd_out=fwd_out, batch={"own": batch})
    expected = learner.module["own"].net(batch[Columns.OBS]).mean()
    assert torch.allclose(losses["own"], expected)
    assert learner.metrics.peek(("own", "seen_by_own_loss")) == 1.0
    before = numpy(learner.module["own"].parameters())
    learner.apply_gradients(learner.postprocess_gradients(learner.compute_gradients(losses)))
    after = numpy(learner.module["own"].parameters())
    assert not all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def test_gradient_norms_are_logged_with_log_gradients_or_when_clipping_by_global_norm():
    from flywheel import SingleAgentEnvRunner

    runner = SingleAgentEnvRunner(config=config().environment("CartPole-v1"))
    episodes = runner.sample(num_timesteps=32)
    runner.stop()
    assert config().log_gradients is False  # RLlib's default
    cases = [
        ({}, True, True),
        ({}, False, False),
        ({"grad_clip": 1.0}, False, True),  # clipping by global norm logs the norm, as in RLlib
        ({"grad_clip": 1.0, "grad_clip_by": "value"}, False, False),
    ]
    for training, log_gradients, expected in cases:
        learner = config(**training).reporting(log_gradients=log_gradients).build_learner(env=ENV)
        results = learner.update(episodes=episodes)
        logged = "gradients_default_optimizer_global_norm" in results[DEFAULT_MODULE_ID]
        assert logged is expected, (training, log_gradients)
