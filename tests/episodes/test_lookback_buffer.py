"""LookbackBuffer: the index arithmetic (chunk-relative, lookback, fill, backward slices), setters, finalize."""

import re

import gymnasium as gym
import numpy as np
import pytest

from flywheel.episodes.lookback_buffer import LookbackBuffer
from flywheel.errors import EpisodeError, EpisodeIndexError

BOX = gym.spaces.Box(-100.0, 100.0, (2,), np.float32)
DICT = gym.spaces.Dict({"pos": gym.spaces.Box(-100.0, 100.0, (2,), np.float32), "n": gym.spaces.Discrete(50)})


def scalars(numpy=False):
    """Data 10..14 of which 10 and 11 are lookback."""
    buffer = LookbackBuffer([10, 11, 12, 13, 14], lookback=2)
    if numpy:
        buffer.finalize()
    return buffer


def as_list(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def test_len_excludes_lookback():
    buffer = scalars()
    assert len(buffer) == 3
    assert buffer.len_incl_lookback() == 5
    assert repr(buffer) == "LookbackBuffer(len=3, lookback=2, finalized=False)"


@pytest.mark.parametrize("numpy", [False, True])
@pytest.mark.parametrize(
    ("index", "neg", "expected"),
    [
        (0, False, 12),
        (2, False, 14),
        (-1, False, 14),
        (-3, False, 12),
        (-4, False, 11),
        (-5, False, 10),
        (-1, True, 11),
        (-2, True, 10),
        (0, True, 12),
        (1, True, 13),
    ],
)
def test_int_index(numpy, index, neg, expected):
    assert scalars(numpy).get(index, neg_index_as_lookback=neg) == expected


@pytest.mark.parametrize("numpy", [False, True])
@pytest.mark.parametrize(("index", "neg"), [(3, False), (-6, False), (-3, True), (10, True)])
def test_int_index_out_of_range_raises_or_fills(numpy, index, neg):
    buffer = scalars(numpy)
    with pytest.raises(
        EpisodeIndexError,
        match=rf"Cannot get at index {index}: out of range of the buffer's 2 lookback and 3 chunk items "
        r"\(indices count from the chunk start, negative ones from its end, or into the lookback with "
        r"neg_index_as_lookback=True\); pass fill=\.\.\. to pad positions outside the data\.",
    ):
        buffer.get(index, neg_index_as_lookback=neg)
    assert buffer.get(index, neg_index_as_lookback=neg, fill=-7) == -7


@pytest.mark.parametrize("numpy", [False, True])
@pytest.mark.parametrize(
    ("indices", "neg", "fill", "expected"),
    [
        (None, False, None, [12, 13, 14]),
        (slice(0, 2), False, None, [12, 13]),
        (slice(1, None), False, None, [13, 14]),
        (slice(-2, None), False, None, [13, 14]),
        (slice(-4, None), False, None, [11, 12, 13, 14]),
        (slice(-2, 1), True, None, [10, 11, 12]),
        (slice(-2, 0), True, None, [10, 11]),
        (slice(-4, 1), True, None, [10, 11, 12]),
        (slice(-4, 1), True, 0, [0, 0, 10, 11, 12]),
        (slice(-7, -2), False, 0, [0, 0, 10, 11, 12]),
        (slice(-7, -2), False, None, [10, 11, 12]),
        (slice(1, 5), False, 0, [13, 14, 0, 0]),
        (slice(4, 6), False, 0, [0, 0]),
        (slice(-9, -7), False, 0, [0, 0]),
        (slice(2, 1), False, 0, []),
        (slice(0, None, 2), False, None, [12, 14]),
        (slice(-2, 2, 2), True, None, [10, 12]),
        (slice(None, None, -1), False, None, [14, 13, 12]),
        (slice(-1, -4, -1), False, None, [14, 13, 12]),
        (slice(1, -3, -1), True, None, [13, 12, 11, 10]),
        (slice(4, 0, -2), False, 0, [0, 14]),
        (slice(0, -5, -1), True, 0, [12, 11, 10, 0, 0]),
        ([0, -1, 1], False, None, [12, 14, 13]),
        ([-1, 0], True, None, [11, 12]),
        ([0, 5, -3], True, 0, [12, 0, 0]),
    ],
)
def test_several_items(numpy, indices, neg, fill, expected):
    result = scalars(numpy).get(indices, neg_index_as_lookback=neg, fill=fill)
    assert isinstance(result, np.ndarray) == numpy
    assert as_list(result) == expected


def test_zero_step_is_rejected():
    with pytest.raises(
        EpisodeError, match=r"Expected a slice with a non-zero step, got slice\(None, None, 0\)"
    ):
        scalars().get(slice(None, None, 0))


def test_newest_item_is_the_stored_object():
    obs = np.zeros(2, np.float32)
    buffer = LookbackBuffer([np.ones(2, np.float32), obs])
    assert buffer.get(-1) is obs


def test_fill_items_take_the_space_shape_and_dtype():
    box = LookbackBuffer([np.ones(2, np.float32)], space=BOX)
    item = box.get(5, fill=0)
    assert item.dtype == np.float32 and item.shape == (2,) and item.tolist() == [0.0, 0.0]
    discrete = LookbackBuffer([1], space=gym.spaces.Discrete(3))
    item = discrete.get(-2, fill=0)
    assert type(item) is np.int64 and item == 0
    nested = LookbackBuffer([{"pos": np.ones(2, np.float32), "n": 3}], space=DICT)
    item = nested.get(1, fill=-1)
    assert item["pos"].tolist() == [-1.0, -1.0] and item["pos"].dtype == np.float32
    assert type(item["n"]) is np.int64 and item["n"] == -1


def test_numpy_fill_takes_the_stored_shape_and_dtype():
    buffer = LookbackBuffer([np.ones(2, np.float32)] * 2, lookback=1)
    buffer.finalize()
    padded = buffer.get(slice(-3, 1), neg_index_as_lookback=True, fill=0)
    assert padded.dtype == np.float32
    assert padded.tolist() == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]


def test_finalize_uses_space_dtypes_and_is_idempotent():
    buffer = LookbackBuffer([np.array([1.0, 2.0]), np.array([3.0, 4.0])], space=BOX)
    buffer.finalize()
    data = buffer.data
    assert data.dtype == np.float32 and data.shape == (2, 2)
    buffer.finalize()
    assert buffer.data is data and buffer.finalized
    empty = LookbackBuffer([], space=BOX)
    empty.finalize()
    assert empty.data.shape == (0, 2) and empty.data.dtype == np.float32
    ints = LookbackBuffer([0, 1, 1], space=gym.spaces.Discrete(2))
    ints.finalize()
    assert ints.data.dtype == np.int64 and ints.data.tolist() == [0, 1, 1]


def test_nested_numpy_is_stacked_leaf_wise():
    items = [{"pos": np.full(2, float(i)), "n": i} for i in range(4)]
    buffer = LookbackBuffer(items, lookback=1, space=DICT)
    buffer.finalize()
    assert set(buffer.data) == {"pos", "n"}
    assert buffer.data["pos"].dtype == np.float32 and buffer.data["pos"].shape == (4, 2)
    assert buffer.data["n"].dtype == np.int64
    assert len(buffer) == 3
    item = buffer.get(-1)
    assert item["pos"].tolist() == [3.0, 3.0] and item["n"] == 3
    part = buffer.get(slice(-1, 2), neg_index_as_lookback=True, fill=0)
    assert part["n"].tolist() == [0, 1, 2]
    padded = buffer.get(slice(2, 4), fill=9)
    assert padded["n"].tolist() == [3, 9] and padded["pos"].tolist() == [[3.0, 3.0], [9.0, 9.0]]
    assert buffer.get([0, 2])["n"].tolist() == [1, 3]


def test_tuple_space_numpy_is_a_tuple_of_arrays():
    space = gym.spaces.Tuple((gym.spaces.Discrete(5), BOX))
    buffer = LookbackBuffer([(i, np.full(2, i, np.float32)) for i in range(3)], space=space)
    buffer.finalize()
    assert isinstance(buffer.data, tuple) and buffer.data[0].tolist() == [0, 1, 2]
    assert len(buffer) == 3
    first, second = buffer.get(1)
    assert first == 1 and second.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("numpy", [False, True])
def test_set_overwrites_in_place(numpy):
    buffer = scalars(numpy)
    buffer.set(20, at_indices=0)
    buffer.set(21, at_indices=-1, neg_index_as_lookback=True)
    buffer.set([30, 31], at_indices=slice(-2, None))
    assert as_list(buffer.data) == [10, 21, 20, 30, 31]
    buffer.set([40, 41, 42])
    assert as_list(buffer.data) == [10, 21, 40, 41, 42]
    buffer.set([50, 51], at_indices=[2, -2], neg_index_as_lookback=True)
    assert as_list(buffer.data) == [51, 21, 40, 41, 50]
    buffer.set([], at_indices=slice(1, 1))
    assert as_list(buffer.data) == [51, 21, 40, 41, 50]


@pytest.mark.parametrize(("at", "neg"), [(3, False), (-3, True), (slice(1, 5), False), ([0, 7], False)])
def test_set_outside_raises(at, neg):
    with pytest.raises(
        EpisodeIndexError,
        match=re.escape(
            f"Cannot set at index {at!r}: out of range of the buffer's 2 lookback and 3 chunk items"
        )
        + r".*; only stored items can change\.",
    ):
        scalars().set([0] * 9 if not isinstance(at, int) else 0, at_indices=at, neg_index_as_lookback=neg)


@pytest.mark.parametrize("numpy", [False, True])
def test_set_with_wrong_count_raises(numpy):
    with pytest.raises(
        EpisodeIndexError,
        match=re.escape(
            "Cannot set 3 new items at slice(0, 2, None), which covers 2 positions; pass exactly one"
        ),
    ):
        scalars(numpy).set([1, 2, 3], at_indices=slice(0, 2))


def test_set_nested_numpy():
    buffer = LookbackBuffer([{"pos": np.zeros(2), "n": 0}] * 3, space=DICT)
    buffer.finalize()
    buffer.set({"pos": np.ones(2), "n": 7}, at_indices=-1)
    buffer.set({"pos": np.full((2, 2), 2.0), "n": np.array([4, 5])}, at_indices=slice(0, 2))
    assert buffer.data["n"].tolist() == [4, 5, 7]
    assert buffer.data["pos"][:, 0].tolist() == [2.0, 2.0, 1.0]


@pytest.mark.parametrize("numpy", [False, True])
def test_tail_is_a_fresh_list(numpy):
    buffer = scalars(numpy)
    tail = buffer.tail(2)
    assert isinstance(tail, list) and as_list(np.asarray(tail)) == [13, 14]
    assert buffer.tail(0) == []
    assert as_list(np.asarray(buffer.tail(9))) == [10, 11, 12, 13, 14]
    tail.append(99)
    assert buffer.len_incl_lookback() == 5


def test_tail_of_nested_numpy_unstacks():
    buffer = LookbackBuffer([{"pos": np.full(2, i), "n": i} for i in range(3)], space=DICT)
    buffer.finalize()
    tail = buffer.tail(2)
    assert [item["n"] for item in tail] == [1, 2] and tail[1]["pos"].tolist() == [2.0, 2.0]


@pytest.mark.parametrize("numpy", [False, True])
def test_sliced_copies_with_lookback(numpy):
    buffer = scalars(numpy)
    part = buffer.sliced(1, 3)
    assert part.lookback == 2 and as_list(part.data) == [11, 12, 13, 14] and len(part) == 2
    assert buffer.sliced(0, 1, lookback=5).lookback == 2
    assert as_list(buffer.sliced(1, 2, lookback=0).data) == [13]
    part.set(0, at_indices=0)
    assert as_list(buffer.data) == [10, 11, 12, 13, 14]


@pytest.mark.parametrize(
    ("mine_numpy", "other_numpy"), [(False, False), (False, True), (True, False), (True, True)]
)
def test_concat_appends_the_chunk_items(mine_numpy, other_numpy):
    mine, other = LookbackBuffer([1, 2]), LookbackBuffer([2, 3, 4, 5], lookback=1)
    for buffer, numpy in ((mine, mine_numpy), (other, other_numpy)):
        if numpy:
            buffer.finalize()
    mine.concat(other)
    assert as_list(np.asarray(mine.data)) == [1, 2, 3, 4, 5]
    assert mine.finalized == mine_numpy


def test_state_round_trip_copies_the_list_and_keeps_the_space():
    buffer = scalars()
    buffer.space = gym.spaces.Discrete(20)
    state = buffer.get_state()
    buffer.append(15)
    restored = LookbackBuffer.from_state(state)
    assert restored.data == [10, 11, 12, 13, 14] and restored.lookback == 2
    assert restored.space == gym.spaces.Discrete(20) and not restored.finalized
