"""SingleAgentEnvRunner: bad envs, connectors and modules fail early with errors that name the culprit."""

import pytest
import torch

from flywheel import Columns, ConnectorV2, RLModuleSpec, SingleAgentEnvRunner, TorchRLModule
from flywheel.errors import ConfigError, ConnectorError, EnvError, ModuleError
from flywheel.testing import ObsOutOfSpaceEnv, WrongSpaceTypeEnv

from .conftest import counting_config


@pytest.mark.parametrize(
    ("env_config", "match"),
    [
        ({"problem": "nan"}, r"ObsOutOfSpaceEnv\.reset\(\) returned an observation outside observation_space: .*"
             r"value nan at index \(0,\) is NaN"),
        ({"at": "step", "problem": "nan"},
         r"ObsOutOfSpaceEnv\.step\(\) returned an observation outside observation_space"),
        ({"problem": "shape"}, r"the shape is wrong \(\(2,\) instead of \(1,\)\)"),
    ],
)  # fmt: skip
def test_env_with_observations_outside_its_space_fails_at_build(env_config, match):
    config = counting_config(env=ObsOutOfSpaceEnv).environment(env_config=env_config)
    with pytest.raises(EnvError, match=match):
        SingleAgentEnvRunner(config=config)


def test_observations_outside_the_box_bounds_warn_once_at_build_or_sampling(make_runner):
    """The check at build leaves bounds to the runner's observation monitor: one warning for both."""
    config = counting_config(env=ObsOutOfSpaceEnv).environment(env_config={"at": "step", "episode_len": 3})
    with pytest.warns(UserWarning) as caught:
        runner = make_runner(config)
        episodes = runner.sample(num_timesteps=12)
    assert len(
        caught
    ) == 1 and "(sub-env 0 of runner 0) returned an observation at step 1 of its episode outside" in str(
        caught[0].message
    )
    assert sum(len(e) for e in episodes) == 12


def test_env_check_can_be_disabled_and_nothing_is_checked_per_step(make_runner):
    config = counting_config(env=ObsOutOfSpaceEnv, episode_len=3).environment(
        env_config={"at": "step", "episode_len": 3}, disable_env_checking=True
    )
    (episode,) = make_runner(config).sample(num_timesteps=3, random_actions=True)
    assert episode.get_observations().ravel().tolist() == [0.0, -1.0, -1.0, -1.0]


def test_env_whose_space_is_not_a_space_fails_at_build():
    with pytest.raises(EnvError, match=r"WrongSpaceTypeEnv\.observation_space is a tuple \(\(0\.0, 1\.0\)\)"):
        SingleAgentEnvRunner(config=counting_config(env=WrongSpaceTypeEnv))


class ReturnsNothing(ConnectorV2):
    def __call__(self, *, batch, **kwargs):
        batch["touched"] = True  # and forgets to return it


def test_env_to_module_piece_returning_none_fails_on_the_first_reset_naming_it(make_runner):
    runner = make_runner(
        counting_config(env_to_module_connector=lambda env, spaces, device: ReturnsNothing())
    )
    with pytest.raises(
        ConnectorError,
        match=r"Connector piece ReturnsNothing returned None, expected the batch \(a dict\)\. "
        r"End its __call__ with `return batch`\.",
    ):
        runner.sample(num_timesteps=1)


def test_module_to_env_piece_returning_none_fails_on_the_first_step_naming_it(make_runner):
    runner = make_runner(counting_config(module_to_env_connector=lambda env, spaces: ReturnsNothing()))
    with pytest.raises(ConnectorError, match=r"Connector piece ReturnsNothing returned None"):
        runner.sample(num_timesteps=1)


class Outputs(TorchRLModule):
    """Returns `model_config["exploration"]` / `["inference"]`: which columns each forward returns."""

    def setup(self):
        self.bias = torch.nn.Parameter(torch.zeros(2))

    def _columns(self, batch, which):
        n = len(batch[Columns.OBS])
        columns = {
            "logits": self.bias.expand(n, 2),
            Columns.ACTION_DIST_INPUTS: self.bias.expand(n, 2),
            Columns.ACTIONS: torch.ones(n, dtype=torch.int64),
        }
        wanted = self.model_config[which]
        return columns["logits"] if wanted == "tensor" else {k: columns[k] for k in wanted}

    def _forward_exploration(self, batch, **kwargs):
        return self._columns(batch, "exploration")

    def _forward_inference(self, batch, **kwargs):
        return self._columns(batch, "inference")


def outputs_config(exploration, inference):
    spec = RLModuleSpec(
        module_class=Outputs, model_config={"exploration": exploration, "inference": inference}
    )
    return counting_config(episode_len=10).rl_module(rl_module_spec=spec)


def test_module_without_action_dist_inputs_fails_with_its_keys_and_the_fix(make_runner):
    runner = make_runner(outputs_config(exploration=["logits"], inference=["logits"]))
    with pytest.raises(
        ModuleError,
        match=r"Outputs\.forward_exploration\(\) returned the keys \['logits'\], but the runner's GetActions "
        r"piece needs Columns\.ACTION_DIST_INPUTS \('action_dist_inputs'\) to sample actions from, or "
        r"Columns\.ACTIONS \('actions'\) chosen by the module\. Fix: return "
        r"\{Columns\.ACTION_DIST_INPUTS: logits\} from Outputs\._forward",
    ):
        runner.sample(num_timesteps=1)


def test_each_forward_kind_is_checked_on_its_first_use(make_runner):
    runner = make_runner(outputs_config(exploration=[Columns.ACTION_DIST_INPUTS], inference=["logits"]))
    assert len(runner.sample(num_timesteps=2, explore=True)[0]) == 2
    with pytest.raises(ModuleError, match=r"Outputs\.forward_inference\(\) returned the keys \['logits'\]"):
        runner.sample(num_timesteps=1, explore=False)


def test_module_choosing_its_own_actions_needs_no_dist_inputs(make_runner):
    runner = make_runner(outputs_config(exploration=[Columns.ACTIONS], inference=[Columns.ACTIONS]))
    (episode,) = runner.sample(num_timesteps=3)
    assert episode.get_actions().tolist() == [1, 1, 1]


def test_module_returning_a_tensor_fails_with_the_fix(make_runner):
    runner = make_runner(outputs_config(exploration="tensor", inference="tensor"))
    with pytest.raises(
        ModuleError, match=r"Outputs\.forward_exploration\(\) returned a Tensor, expected a dict of columns"
    ):
        runner.sample(num_timesteps=1)


def test_stateful_module_without_lookback_fails_at_build():
    config = counting_config(episode_lookback_horizon=0).rl_module(model_config={"use_lstm": True})
    with pytest.raises(
        ConfigError,
        match=r"DefaultPPOTorchRLModule is stateful \(recurrent\), .* but episode_lookback_horizon=0\. "
        r"Fix: config\.env_runners\(episode_lookback_horizon=1\) or more\.",
    ):
        SingleAgentEnvRunner(config=config)
