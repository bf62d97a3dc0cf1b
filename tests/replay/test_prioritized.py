"""PrioritizedEpisodeReplayBuffer: sampling ∝ p^alpha, exact importance weights, priority updates."""

import numpy as np
import pytest

from flywheel import Columns
from flywheel.errors import ConfigError
from flywheel.replay import INDICES, PrioritizedEpisodeReplayBuffer

from .conftest import chunk, columns, transitions


def _four_steps(alpha, priorities, seed=0):
    buffer = PrioritizedEpisodeReplayBuffer(10, alpha=alpha, seed=seed)
    buffer.add(chunk([1.0] * 4, terminated=True))
    buffer.update_priorities(np.array(priorities), np.arange(4))
    return buffer


def test_sampling_frequencies_follow_priority_to_the_alpha():
    buffer = _four_steps(0.5, [1.0, 4.0, 9.0, 16.0])  # p^0.5 = 1, 2, 3, 4
    batch = columns(buffer.sample(40_000))
    frequencies = np.bincount(batch[INDICES], minlength=4) / 40_000
    np.testing.assert_allclose(frequencies, [0.1, 0.2, 0.3, 0.4], atol=0.008)
    np.testing.assert_array_equal(batch[INDICES], batch[Columns.OBS][:, 0])  # ids follow the rows


def test_importance_weights_are_exact():
    buffer = _four_steps(0.5, [1.0, 4.0, 9.0, 16.0])
    # N = 4, P = [.1, .2, .3, .4]: w_i = (N P_i)^-beta / (N P_min)^-beta.
    for beta, expected in ((1.0, [1.0, 1 / 2, 1 / 3, 1 / 4]), (0.5, [1.0, 2**-0.5, 3**-0.5, 0.5])):
        batch = columns(buffer.sample(200, beta=beta))
        weights = {int(i): float(w) for i, w in zip(batch[INDICES], batch[Columns.WEIGHTS])}
        np.testing.assert_allclose([weights[i] for i in range(4)], expected, rtol=1e-6)
    assert columns(buffer.sample(50, beta=0.0))[Columns.WEIGHTS].tolist() == [1.0] * 50


def test_alpha_zero_is_uniform():
    buffer = _four_steps(0.0, [1.0, 4.0, 9.0, 100.0])
    batch = columns(buffer.sample(40_000, beta=1.0))
    np.testing.assert_allclose(np.bincount(batch[INDICES]) / 40_000, 0.25, atol=0.008)
    assert set(batch[Columns.WEIGHTS].tolist()) == {1.0}


def test_new_steps_get_the_largest_priority_seen():
    buffer = PrioritizedEpisodeReplayBuffer(10, alpha=0.5, seed=0)
    buffer.add(chunk([1.0], id_="A"))
    buffer.update_priorities(np.array([4.0]), np.array([0]))  # p^alpha = 2, largest priority 4
    buffer.add(chunk([1.0], base=10))  # gets 4 as well
    buffer.update_priorities(np.array([1.0]), np.array([0]))  # row 0 back to p^alpha = 1
    batch = columns(buffer.sample(30_000, beta=1.0))
    weights = {int(i): float(w) for i, w in zip(batch[INDICES], batch[Columns.WEIGHTS])}
    assert weights == {0: 1.0, 1: 0.5}
    np.testing.assert_allclose(np.bincount(batch[INDICES]) / 30_000, [1 / 3, 2 / 3], atol=0.01)


def test_evicted_steps_are_never_drawn_and_stale_updates_are_skipped():
    buffer = PrioritizedEpisodeReplayBuffer(4, alpha=1.0, seed=0)
    buffer.add(chunk([1.0] * 4, terminated=True))
    stale = columns(buffer.sample(8))[INDICES]
    buffer.add(chunk([1.0] * 3, base=10, terminated=True))  # evicts rows 0-3, reuses 3 of their slots
    buffer.update_priorities(np.full(len(stale), 100.0), stale)
    batch = columns(buffer.sample(3000, beta=1.0))
    assert set(batch[INDICES].tolist()) == {4, 5, 6}
    assert set(batch[Columns.OBS][:, 0].tolist()) == {10.0, 11.0, 12.0}
    assert set(batch[Columns.WEIGHTS].tolist()) == {1.0}  # the stale update changed nothing
    buffer.update_priorities(np.array([100.0]), np.array([5]))
    assert columns(buffer.sample(3000))[INDICES].tolist().count(5) > 2900  # 100 / 102 of the mass


def test_n_step_windows_are_the_same_as_uniform_replay():
    buffer = PrioritizedEpisodeReplayBuffer(10, seed=0)
    buffer.add(chunk([1.0, 2.0, 4.0, 8.0], truncated=True))
    assert transitions(buffer.sample(200, n_step=3, gamma=0.5, beta=0.4)) == {
        0.0: (3.0, 3.0, 3, False, False),
        1.0: (6.0, 4.0, 3, False, True),
        2.0: (8.0, 4.0, 2, False, True),
        3.0: (8.0, 4.0, 1, False, True),
    }


def test_invalid_priorities_indices_and_arguments_are_rejected():
    buffer = _four_steps(0.6, [1.0, 1.0, 1.0, 1.0])
    with pytest.raises(ConfigError, match=r"Expected finite priorities > 0, got \[0.0, nan\]"):
        buffer.update_priorities(np.array([1.0, 0.0, np.nan]), np.array([0, 1, 2]))
    with pytest.raises(ConfigError, match="got 2 priorities for 1 indices"):
        buffer.update_priorities(np.array([1.0, 1.0]), np.array([0]))
    with pytest.raises(ConfigError, match=r"ids in \[0, 4\)\), got values in \[0, 4\]"):
        buffer.update_priorities(np.array([1.0, 1.0]), np.array([0, 4]))
    with pytest.raises(ConfigError, match="Expected beta to be a number >= 0, got -1"):
        buffer.sample(beta=-1)
    with pytest.raises(ConfigError, match="Expected alpha to be a number >= 0, got -0.5"):
        PrioritizedEpisodeReplayBuffer(alpha=-0.5)


def test_state_round_trip_keeps_priorities():
    buffer = PrioritizedEpisodeReplayBuffer(6, alpha=0.7, seed=5)
    buffer.add([chunk([1.0] * 3, terminated=True), chunk([1.0] * 3, base=10)])
    buffer.update_priorities(np.array([5.0, 0.5, 2.0]), np.array([1, 2, 4]))
    buffer.add(chunk([1.0] * 2, base=20))  # evicts the first episode, new rows get priority 5
    restored = PrioritizedEpisodeReplayBuffer(6, alpha=0.7)
    restored.set_state(buffer.get_state())
    a, b = columns(buffer.sample(500, beta=0.5)), columns(restored.sample(500, beta=0.5))
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    for each in (buffer, restored):
        each.add(chunk([1.0] * 2, base=30))
    np.testing.assert_array_equal(
        columns(buffer.sample(500))[INDICES], columns(restored.sample(500))[INDICES]
    )
