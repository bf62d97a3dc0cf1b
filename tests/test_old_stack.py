"""RLlib's old API stack names that new-stack programs use: PolicySpec in `policies`, SampleBatch's
column names, Policy subclasses that are defined but never made."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import PPOConfig
from flywheel.columns import Columns
from flywheel.env_runners.multi_agent_modules import module_spaces
from flywheel.errors import ConfigError
from flywheel.old_stack import Policy, PolicySpec, SampleBatch, policy_spec_from

BOX3 = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
BOX5 = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
TWO, FOUR = gym.spaces.Discrete(2), gym.spaces.Discrete(4)


def test_policy_spec_fields_default_to_none_and_ignored_settings_warn():
    assert PolicySpec() == PolicySpec(None, None, None, None)
    with pytest.warns(UserWarning, match=r"PolicySpec\(policy_class=..., config=...\): old API stack"):
        PolicySpec(policy_class=object, config={"lr": 0.1})


def test_rllib_4_tuples_are_policy_specs_and_other_lengths_are_refused():
    assert policy_spec_from((None, BOX3, TWO, None), "p") == PolicySpec(None, BOX3, TWO, None)
    assert policy_spec_from({"p"}, "p") is None
    with pytest.raises(ConfigError, match=r"policies\['p'\] = \(None, .*4 items, got 2"):
        policy_spec_from((None, BOX3), "p")


def config_with(policies):
    return PPOConfig().multi_agent(
        policies=policies, policy_mapping_fn=lambda agent_id, *a, **kw: f"p{agent_id}"
    )


def test_a_policy_spec_without_spaces_gives_its_module_the_agents_spaces():
    config = config_with({"p0": PolicySpec(), "p1": PolicySpec()})
    spaces = module_spaces(config, [0, 1], {0: BOX3, 1: BOX5}, {0: TWO, 1: FOUR})
    assert spaces == {"p0": (BOX3, TWO), "p1": (BOX5, FOUR)}


def test_a_policy_spec_with_spaces_names_its_modules_spaces_as_in_rllib():
    # p2: no agent maps to it (agents have different spaces): its PolicySpec names them.
    config = config_with(
        {"p0": PolicySpec(observation_space=BOX5), "p1": PolicySpec(), "p2": (None, BOX3, FOUR, None)}
    )
    spaces = module_spaces(config, [0, 1], {0: BOX3, 1: BOX5}, {0: TWO, 1: FOUR})
    assert spaces == {"p0": (BOX5, TWO), "p1": (BOX5, FOUR), "p2": (BOX3, FOUR)}


def test_sample_batch_names_the_columns_and_refuses_to_be_a_batch():
    assert (SampleBatch.OBS, SampleBatch.CUR_OBS, SampleBatch.NEXT_OBS) == (Columns.OBS, "obs", "new_obs")
    assert (SampleBatch.ACTIONS, SampleBatch.VF_PREDS, SampleBatch.PREV_ACTIONS) == (
        "actions",
        "vf_preds",
        "prev_actions",
    )
    with pytest.raises(ConfigError, match=r"SampleBatch\(...\) is RLlib's old API stack batch.*Columns"):
        SampleBatch({SampleBatch.OBS: [1]})


def test_a_policy_subclass_is_defined_but_never_made():
    class RandomPolicy(Policy):
        def compute_actions(self, obs_batch, **kwargs):
            return []

    with pytest.raises(
        ConfigError, match=r"RandomPolicy: RLlib's old API stack Policy does not run on flywheel"
    ):
        RandomPolicy(BOX3, TWO, {})
