"""Which torch mode each part of a runner's step runs in: the module's acting pass and the
module-to-env pipeline under `torch.inference_mode()`, the env-to-module pipeline and the callbacks
with torch's grad mode as the caller set it (a callback may train a model of its own)."""

import torch

from flywheel import ConnectorV2, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule

from .conftest import counting_config


def _modes() -> tuple[bool, bool]:
    return torch.is_inference_mode_enabled(), torch.is_grad_enabled()


class ModeRecordingModule(DefaultPPOTorchRLModule):
    def setup(self):
        super().setup()
        self.modes = []

    def _forward(self, batch, **kwargs):
        self.modes.append(_modes())
        return super()._forward(batch, **kwargs)


class ModeRecordingPiece(ConnectorV2):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.modes = []

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        self.modes.append(_modes())
        return batch


def test_module_and_module_to_env_act_under_inference_mode_the_rest_does_not(make_runner):
    trained = []

    def train_a_model_of_its_own(**kwargs):  # what a callback may do: autograd must work here
        weight = torch.ones(2, requires_grad=True)
        (weight * 3.0).sum().backward()
        assert weight.grad is not None
        trained.append(_modes())

    config = counting_config(
        num_envs=2,
        env_to_module_connector=lambda env, spaces, device: ModeRecordingPiece(),
        module_to_env_connector=lambda env, spaces: ModeRecordingPiece(),
    )
    config.rl_module(rl_module_spec=RLModuleSpec(module_class=ModeRecordingModule))
    config.callbacks(on_episode_step=train_a_model_of_its_own)
    runner = make_runner(config)
    episodes = runner.sample(num_timesteps=12)

    assert [len(e) for e in episodes] and sum(len(e) for e in episodes) == 12
    assert set(runner.module.modes) == {(True, False)} and len(runner.module.modes) == 6
    assert set(runner.module_to_env[-1].modes) == {(True, False)}
    assert set(runner.env_to_module[0].modes) == {(False, True)}
    assert set(trained) == {(False, True)} and len(trained) == 12
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_hooks_on_the_default_modules_layers_run_while_sampling(make_runner):
    """The acting pass skips `nn.Module.__call__` only where it would run nothing but `forward`."""
    runner = make_runner(counting_config(num_envs=2))
    module = runner.module
    calls = []
    first_layer = module.encoder.actor_encoder[0]
    handles = [
        first_layer.register_forward_hook(lambda mod, args, out: calls.append(("layer", tuple(out.shape)))),
        module.pi.register_forward_pre_hook(lambda mod, args: calls.append(("pi", tuple(args[0].shape)))),
    ]
    runner.sample(num_timesteps=6)
    assert calls == [("layer", (2, 256)), ("pi", (2, 256))] * 3
    for handle in handles:
        handle.remove()
    calls.clear()
    runner.sample(num_timesteps=6)
    assert calls == []
