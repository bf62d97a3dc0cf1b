"""RLlib's old-stack schedule keywords (`lr_schedule`, `entropy_coeff_schedule`) say that the setting
itself takes the schedule, with the user's value as the fix."""

import re

import pytest

from flywheel import AlgorithmConfig, PPOConfig


def test_lr_schedule_says_lr_takes_the_schedule():
    with pytest.raises(TypeError) as raised:
        PPOConfig().training(lr_schedule=[[0, 1e-3], [100_000, 1e-4]])
    assert str(raised.value) == (
        "PPOConfig.training() got an unexpected keyword 'lr_schedule'. RLlib's new API stack (and flywheel) "
        "take the schedule in 'lr' itself: a float, or a list of [env_steps, value] pairs interpolated "
        "linearly. Fix: lr=[[0, 0.001], [100000, 0.0001]]."
    )
    config = PPOConfig().training(lr=[[0, 1e-3], [100_000, 1e-4]])  # the fix works
    assert config.lr == [[0, 1e-3], [100_000, 1e-4]]


def test_entropy_coeff_schedule_and_the_dict_path():
    with pytest.raises(TypeError, match=re.escape("take the schedule in 'entropy_coeff' itself")):
        PPOConfig().training(entropy_coeff_schedule=[[0, 0.01], [1000, 0.0]])
    with pytest.raises(
        TypeError, match=re.escape("update_from_dict() got an unexpected key 'lr_schedule'. RLlib's")
    ):
        PPOConfig().update_from_dict({"lr_schedule": [[0, 1e-3]]})
    # Only where the setting exists: AlgorithmConfig has no entropy_coeff, so the usual hint applies.
    with pytest.raises(TypeError, match=r"unexpected keyword 'entropy_coeff_schedule'\. Valid keywords: "):
        AlgorithmConfig().training(entropy_coeff_schedule=[[0, 0.01]])
