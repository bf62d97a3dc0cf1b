"""Percentile return normalization: EMAs of the 5th/95th percentiles (decay 0.99), divisor max(1, S)."""

import pytest
import torch

from flywheel.algorithms.dreamerv3.return_normalization import ReturnNormalizer


def test_first_batch_sets_then_ema_moves():
    normalizer = ReturnNormalizer()
    assert normalizer.scale().item() == 1.0  # before any update
    returns = torch.arange(101, dtype=torch.float32)  # percentiles 5 and 95 are exactly 5 and 95
    normalizer.update(returns)
    assert (normalizer.low.item(), normalizer.high.item()) == (5.0, 95.0)
    assert normalizer.scale().item() == 90.0
    normalizer.update(returns * 2.0)  # 10 and 190
    assert normalizer.low.item() == pytest.approx(0.99 * 5 + 0.01 * 10)
    assert normalizer.high.item() == pytest.approx(0.99 * 95 + 0.01 * 190)
    advantages = normalizer.advantages(torch.tensor([50.0]), torch.tensor([41.0]))
    assert advantages.item() == pytest.approx(9.0 / (0.99 * 90 + 0.01 * 180))


def test_small_spread_is_not_scaled_up():
    normalizer = ReturnNormalizer()
    normalizer.update(torch.linspace(0.0, 0.1, 11))
    assert normalizer.scale().item() == 1.0
    assert normalizer.advantages(torch.tensor([0.3]), torch.tensor([0.1])).item() == pytest.approx(0.2)


def test_state_travels_with_the_module():
    normalizer = ReturnNormalizer()
    normalizer.update(torch.arange(101, dtype=torch.float32))
    restored = ReturnNormalizer()
    restored.load_state_dict(normalizer.state_dict())
    assert restored.scale().item() == 90.0


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="0 <= decay < 1"):
        ReturnNormalizer(decay=1.0)
