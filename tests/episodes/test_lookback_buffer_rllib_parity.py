"""RLlib 2.60's documented `InfiniteLookbackBuffer` behaviour, one test per RLlib unit test
(rllib/env/tests/test_infinite_lookback_buffer.py), written for flywheel's `LookbackBuffer`.

Each test names the RLlib test whose behaviour it pins. Documented differences (docs/porting.md):
a reversed range with step 1 (``get(slice(-10, -12), fill=0)``) is empty, as a Python slice is,
where RLlib returns ``fill`` items.
"""

import re

import gymnasium as gym
import numpy as np
import pytest

from flywheel.episodes import InfiniteLookbackBuffer, LookbackBuffer
from flywheel.episodes.space_items import fill_item, space_struct
from flywheel.errors import EpisodeIndexError

NESTED = gym.spaces.Dict(
    {
        "a": gym.spaces.Discrete(4),
        "b": gym.spaces.Box(0.0, 3.0, (2, 3), np.float32),
        "c": gym.spaces.Tuple([gym.spaces.MultiDiscrete([4, 4]), gym.spaces.Box(0.0, 3.0, (1,), np.float32)]),
    }
)


def plain(value):
    """Lists and arrays (also nested in dicts/tuples) as plain Python lists."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    return np.asarray(value).tolist()


def nested_item(value):
    return fill_item(space_struct(NESTED), float(value))


def both(buffer):
    """The buffer as it is, then finalized: RLlib's tests check every read on both."""
    yield buffer
    buffer.finalize()
    yield buffer


def test_rllib_name_is_the_same_class():
    assert InfiniteLookbackBuffer is LookbackBuffer


def test_append_and_pop():
    buffer = LookbackBuffer([0, 1, 2, 3])
    buffer.append(4)
    buffer.append(5)
    assert len(buffer) == 6
    assert buffer.pop() == 5 and buffer.pop() == 4 and len(buffer) == 4
    buffer.append(10)
    assert buffer.data == [0, 1, 2, 3, 10]
    buffer.finalize()
    buffer.append(11)  # a finalized buffer still grows (by concatenating)
    assert buffer.get(-1) == 11 and isinstance(buffer.get([-2, -1]), np.ndarray)
    assert buffer.get([-2, -1]).tolist() == [10, 11]
    buffer.extend([12, 13])
    assert buffer.get([-2, -1]).tolist() == [12, 13]
    buffer.pop()
    assert buffer.get(-1) == 12 and buffer.get(0) == 0 and len(buffer) == 7


def test_complex_structs():
    buffer = LookbackBuffer([NESTED.sample() for _ in range(4)])
    buffer.append(NESTED.sample())
    buffer.append(NESTED.sample())
    buffer.finalize()
    assert isinstance(buffer.data, dict) and isinstance(buffer.data["c"], tuple)
    assert [buffer.data["a"].shape, buffer.data["b"].shape] == [(6,), (6, 2, 3)]
    assert [leaf.shape for leaf in buffer.data["c"]] == [(6, 2), (6, 1)]
    assert len(buffer) == 6


def test_lookback():
    buffer = LookbackBuffer([0, 1, 2, 3], lookback=2)
    assert len(buffer) == 2 and buffer.get() == [2, 3]
    buffer.append(4)
    buffer.append(5)
    assert len(buffer) == 4 and buffer.get() == [2, 3, 4, 5]
    buffer.pop()
    assert len(buffer) == 3 and buffer.get() == [2, 3, 4]


def test_get_with_lookback():
    for buffer in both(LookbackBuffer([0, 1, 2, 3, 4], lookback=2)):
        assert len(buffer) == 3
        assert plain(buffer.get()) == plain(buffer[:]) == [2, 3, 4]
        singles = {-1: 4, -2: 3, -4: 1, 0: 2, 1: 3, 2: 4}
        assert {i: buffer.get(i) for i in singles} == {i: buffer[i] for i in singles} == singles
        for bad in (-6, -1000, 3, 1000):
            with pytest.raises(IndexError):
                buffer.get(bad)
            with pytest.raises(IndexError):
                buffer[bad]
        for bad in ([-6], [-1, -6], [-1000], [6], [1, 6], [1000]):
            with pytest.raises(IndexError):
                buffer.get(bad)
        lists = {(-4, -5): [1, 0], (-1,): [4], (-5,): [0], (1, 0, 2): [3, 2, 4], (1, 0, -2): [3, 2, 3]}
        lists[(-3, 1, -1)] = [2, 3, 4]
        assert {k: plain(buffer.get(list(k))) for k in lists} == lists
        slices = {
            (None, 2): [2, 3],
            (None, 3): [2, 3, 4],
            (None, -1): [2, 3],
            (None, -2): [2],
            (2, None): [4],
            (2, 5): [4],
            (1, 5): [3, 4],
            (-1, 5): [4],
            (-4, None): [1, 2, 3, 4],
            (-4, 5): [1, 2, 3, 4],
            (-2, -1): [3],
            (-4, -2): [1, 2],
            (-5, -1): [0, 1, 2, 3],
            (-6, -2): [0, 1, 2],  # clipped at the start of the lookback
            (0, 3): [2, 3, 4],
            (1, 3): [3, 4],
            (0, -1): [2, 3],
            (1, -1): [3],
            (-4, -3): [1],
        }
        assert {k: plain(buffer.get(slice(*k))) for k in slices} == slices
        assert {k: plain(buffer[k[0] : k[1]]) for k in slices} == slices
    assert isinstance(buffer.get([1, 0, 2]), np.ndarray)


def test_get_with_lookback_and_fill():
    for buffer in both(LookbackBuffer([0, 1, 2, 3, 4, 5], lookback=3, space=gym.spaces.Discrete(6))):
        singles = {-10: 10, -3: 3, -2: 4, -1: 5, 0: 3, 2: 5, 100: 10}
        assert {i: int(buffer.get(i, fill=10)) for i in singles} == singles
        cases = [
            ((-8, None), 10, [10, 10, 0, 1, 2, 3, 4, 5]),
            ((-10, -4), 11, [11, 11, 11, 11, 0, 1]),
            ((-20, -15), 0, [0] * 5),  # wholly before the data
            ((-1001, -1000), 6, [6]),
            ((15, 17), 0, [0, 0]),  # wholly after the data
            ((2, 8), 12, [5, 12, 12, 12, 12, 12]),
            ((1, 5), -14, [4, 5, -14, -14]),
            ((-6, -1), 999, [0, 1, 2, 3, 4]),  # nothing to fill
            ((None, 3), 999, [3, 4, 5]),
        ]
        assert [plain(buffer.get(slice(*s), fill=f)) for s, f, _ in cases] == [e for _, _, e in cases]
    assert isinstance(buffer.get(slice(15, 17), fill=0), np.ndarray)


def test_get_with_fill_and_neg_indices_into_lookback_buffer():
    for buffer in both(LookbackBuffer(list(range(11)), lookback=4, space=gym.spaces.Discrete(11))):
        back = {"neg_index_as_lookback": True}
        assert [buffer.get(i, **back) for i in (-1, -2, -3, -4)] == [3, 2, 1, 0]
        assert plain(buffer.get([-1, -3], **back)) == [3, 1]
        assert plain(buffer.get(slice(-2, 0), **back)) == [2, 3]
        assert plain(buffer.get(slice(-2, None), **back)) == list(range(2, 11))
        assert [int(buffer.get(i, fill=10, **back)) for i in (-8, -800, 8, 800)] == [10] * 4
        cases = [
            ((-8, 0), 10, [10, 10, 10, 10, 0, 1, 2, 3]),
            ((-6, None), 11, [11, 11, *range(11)]),
            ((-10, -4), 11, [11] * 6),
            ((10, 15), 0, [0] * 5),
            ((-2, 8), 12, [*range(2, 11), 12]),
            ((-1, 5), -14, [3, 4, 5, 6, 7, 8]),
            ((-4, -1), 999, [0, 1, 2]),
        ]
        assert [plain(buffer.get(slice(*s), fill=f, **back)) for s, f, _ in cases] == [e for _, _, e in cases]
        assert plain(buffer.get([-8, -1], fill=9, **back)) == [9, 3]
        assert plain(buffer.get([8, 1], fill=9, **back)) == [9, 5]
    assert plain(buffer.get(slice(-17, -15), fill=0, neg_index_as_lookback=True)) == [0, 0]
    assert isinstance(buffer.get([-3, -1], fill=0, neg_index_as_lookback=True), np.ndarray)


def test_get_with_fill_0_and_zero_hot():
    for buffer in both(LookbackBuffer([0, 1, 0, 1], space=gym.spaces.Discrete(2))):
        assert plain(buffer.get(4, fill=0, one_hot_discrete=True)) == [0.0, 0.0]
        assert plain(buffer.get(-1, neg_index_as_lookback=True, fill=0, one_hot_discrete=True)) == [0.0, 0.0]
        assert plain(buffer.get(slice(0, 2), one_hot_discrete=True)) == [[1.0, 0.0], [0.0, 1.0]]


def test_get_with_complex_space():
    zero, two, three = (plain(nested_item(v)) for v in (0, 2, 3))
    for buffer in both(LookbackBuffer([nested_item(i) for i in range(4)], lookback=2, space=NESTED)):
        batch = _stacked if buffer.finalized else list
        assert [plain(buffer.get(i)) for i in (-1, -2, -4)] == [three, two, zero]
        assert plain(buffer.get(-5, fill=0.0)) == zero
        assert plain(buffer.get([-5, 1], fill=0.0)) == batch([zero, three])
        assert plain(buffer.get(slice(1, 3), fill=0.0)) == batch([three, zero])
        hot = plain(buffer.get([-10], fill=0.0, one_hot_discrete=True))
        first = hot[0] if not buffer.finalized else {"a": hot["a"][0], "c": (hot["c"][0][0],)}
        # Zero-hot Discrete(4) and MultiDiscrete([4, 4]); a stored item is one-hot.
        assert first["a"] == [0.0] * 4 and first["c"][0] == [0.0] * 8
        newest = plain(buffer.get(-1, one_hot_discrete=True))
        assert newest["a"] == [0, 0, 0, 1] and newest["c"][0] == [0, 0, 0, 1] * 2 and newest["c"][1] == [3.0]
        # A slice wholly outside the data is all fill, whichever way it points (RLlib: |start - stop| items).
        for outside in (slice(-10, -12), slice(-12, -10), slice(100, 98)):
            assert plain(buffer.get(outside, fill=0.0)) == batch([zero, zero])
        assert plain(buffer.get(slice(-10, -12), fill=0.0, neg_index_as_lookback=True)) == batch([zero, zero])
        assert len(buffer.get(slice(-10, -12))["a"] if buffer.finalized else buffer.get(slice(-10, -12))) == 0


def _stacked(items):
    """Plain items of NESTED as finalized data holds them: one list per leaf."""
    return {
        "a": [i["a"] for i in items],
        "b": [i["b"] for i in items],
        "c": tuple(map(list, zip(*[i["c"] for i in items]))),
    }


def test_set():
    buffer = LookbackBuffer([0, 1, 2, 3, 4, 5, 6, 7], lookback=2)
    buffer[0:2] = [200, 300]
    buffer[-1] = 700
    buffer[-3] = 500
    buffer[-4:-2] = [400, 5000]
    buffer[0] = 2000
    assert buffer.data == [0, 1, 2000, 300, 400, 5000, 6, 700]
    buffer[:] = [2, 3, 4, 5, 6, 7]
    assert buffer.data == list(range(8))
    buffer.set(700, at_indices=-1)
    buffer.set([400, 5000, 60], at_indices=slice(-4, -1))
    assert buffer.data == [0, 1, 2, 3, 400, 5000, 60, 700]
    for at, back in ((-100, False), (-3, True), (-9, False), (6, False), (100, False)):
        with pytest.raises(IndexError):
            buffer.set(100, at_indices=at, neg_index_as_lookback=back)
    buffer.set([2, 3, 4, 5, 6, 7])
    buffer.set([100, 200, 300], at_indices=slice(-1, 2), neg_index_as_lookback=True)
    buffer.set(-999, at_indices=-2, neg_index_as_lookback=True)
    assert buffer.data == [-999, 100, 200, 300, 4, 5, 6, 7]
    buffer.set([-1, -4], at_indices=slice(3, 1, -1), neg_index_as_lookback=True)  # backwards
    buffer.set([-10, -40, -30], at_indices=slice(3, 0, -1))
    assert buffer.data == [-999, 100, 200, -30, -40, -10, 6, 7]
    with pytest.raises(EpisodeIndexError, match=re.escape("Cannot set 2 new items at slice(0, 1, None)")):
        buffer.set([100, 101], at_indices=slice(0, 1))


def test_set_with_complex_space():
    buffer = LookbackBuffer([nested_item(i) for i in range(10)], lookback=2, space=NESTED)
    buffer[0:2] = [nested_item(1), nested_item(3)]
    assert [plain(buffer.data[i])["a"] for i in range(4)] == [0, 1, 1, 3]


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Discrete(5),
        gym.spaces.Box(0, 1, shape=(2, 2)),
        gym.spaces.MultiDiscrete(np.array([[2, 3], [4, 5]])),
        gym.spaces.Dict(a=gym.spaces.Discrete(4), b=gym.spaces.Dict(c=gym.spaces.Box(0, 1, shape=(2, 2)))),
        gym.spaces.Tuple([gym.spaces.Discrete(4), gym.spaces.Tuple([gym.spaces.Discrete(4)])]),
    ],
)
def test_get_set_state(space):
    buffer = LookbackBuffer([space.sample() for _ in range(5)], space=space)
    assert LookbackBuffer.from_state(buffer.get_state()) == buffer
    buffer.append(space.sample())
    buffer.finalize()
    restored = LookbackBuffer.from_state(buffer.get_state())
    assert restored == buffer and restored.finalized and restored.space == space
    restored.append(space.sample())
    assert len(restored) == 7 and restored != buffer
