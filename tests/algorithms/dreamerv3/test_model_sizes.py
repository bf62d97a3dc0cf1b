"""The model sizes (paper table B.1 plus RLlib 2.60's debug sizes) and symlog_obs="auto"."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel.algorithms.dreamerv3.model_sizes import MODEL_SIZES, model_dims, uses_symlog_obs


def test_table():
    assert list(MODEL_SIZES) == ["nano", "micro", "mini", "XXS", "XS", "S", "M", "L", "XL"]
    assert tuple(model_dims("XS")) == (256, 1, 256, 32, 32, 24)
    assert tuple(model_dims("M")) == (640, 3, 1024, 32, 32, 48)
    assert tuple(model_dims("nano")) == (16, 1, 16, 4, 4, 2)
    assert [dims.gru_units for dims in MODEL_SIZES.values()] == [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    assert [dims.num_dense_layers for dims in MODEL_SIZES.values()] == [1, 1, 1, 1, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="model_size='xs' is not one of"):
        model_dims("xs")


def test_symlog_obs_auto():
    vector = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    image = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)
    assert uses_symlog_obs(vector, "auto") and not uses_symlog_obs(image, "auto")
    assert uses_symlog_obs(image, True) and not uses_symlog_obs(vector, False)
