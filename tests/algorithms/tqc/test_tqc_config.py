"""TQCConfig: RLlib 2.60's settings and defaults, keywords, the settings reaching the module, problems."""

import pytest

import flywheel
from flywheel.algorithms.registry import config_class
from flywheel.algorithms.sac import SACConfig
from flywheel.algorithms.tqc import TQC, TQCConfig
from flywheel.errors import ConfigError


def test_defaults_are_rllibs_and_sacs():
    config = TQCConfig()
    assert (config.n_quantiles, config.n_critics, config.top_quantiles_to_drop_per_net) == (25, 2, 2)
    sac = SACConfig()
    shared = (
        "actor_lr",
        "critic_lr",
        "alpha_lr",
        "tau",
        "initial_alpha",
        "target_entropy",
        "train_batch_size",
    )
    assert {name: getattr(config, name) for name in shared} == {name: getattr(sac, name) for name in shared}
    assert isinstance(config, SACConfig) and config.algo_class is TQC
    assert (flywheel.TQCConfig, flywheel.TQC, config_class("TQC")) == (TQCConfig, TQC, TQCConfig)
    TQCConfig().environment("Pendulum-v1").validate()


def test_training_takes_tqc_and_sac_keywords_and_the_module_gets_the_critics():
    config = (
        TQCConfig()
        .environment("Pendulum-v1")
        .training(n_quantiles=5, n_critics=3, top_quantiles_to_drop_per_net=1, actor_lr=1e-3)
    )
    assert (config.n_quantiles, config.n_critics, config.top_quantiles_to_drop_per_net, config.actor_lr) == (
        5,
        3,
        1,
        1e-3,
    )
    spec = config.get_rl_module_spec()
    assert spec.module_class.__name__ == "DefaultTQCTorchRLModule"
    assert spec.model_config == {
        "fcnet_hiddens": [256, 256],
        "fcnet_activation": "relu",
        "twin_q": True,
        "n_quantiles": 5,
        "n_critics": 3,
    }
    with pytest.raises(TypeError, match=r"TQCConfig.training\(\) got an unexpected keyword 'n_quantile'"):
        TQCConfig().training(n_quantile=5)


def test_problems():
    config = TQCConfig().environment("Pendulum-v1").training(n_quantiles=0, n_critics=1.5, twin_q=False)
    with pytest.raises(ConfigError) as info:
        config.validate()
    message = str(info.value)
    assert message.startswith("Invalid TQCConfig (3 problems):\n")
    assert (
        "- n_quantiles=0 must be an int >= 1. Fix: pass an int >= 1 to config.training(n_quantiles=...)"
        in message
    )
    assert "- n_critics=1.5 must be an int >= 1." in message
    assert (
        "- twin_q=False: TQC does not use twin_q; it has n_critics=1.5 critics. Fix: leave twin_q at True and "
        "set the number of critics with config.training(n_critics=...)." in message
    )
    with pytest.raises(ConfigError) as info:
        TQCConfig().training(top_quantiles_to_drop_per_net=-1).validate()
    assert "top_quantiles_to_drop_per_net=-1 must be an int >= 0" in str(info.value)


def test_dropping_every_quantile_is_refused_with_the_fix():
    TQCConfig().environment("Pendulum-v1").training(n_quantiles=3, top_quantiles_to_drop_per_net=2).validate()
    with pytest.raises(ConfigError) as info:
        TQCConfig().environment("Pendulum-v1").training(
            n_quantiles=3, n_critics=5, top_quantiles_to_drop_per_net=3
        ).validate()
    assert str(info.value) == (
        "Invalid TQCConfig (1 problem):\n- top_quantiles_to_drop_per_net=3 drops 15 of the 15 target quantiles "
        "(n_quantiles=3 x n_critics=5), leaving none. Fix: drop fewer than n_quantiles per critic, e.g. "
        "config.training(n_quantiles=25, top_quantiles_to_drop_per_net=2) (RLlib's defaults)."
    )
