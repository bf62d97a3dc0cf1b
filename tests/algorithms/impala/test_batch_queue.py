"""BatchQueue: IMPALA's bounded queue (oldest first, once each) and APPO's circular buffer (K random uses)."""

import pytest

from flywheel.algorithms.impala.batch_queue import BatchQueue


def test_a_queue_hands_out_oldest_first_and_a_full_one_evicts_the_oldest():
    queue = BatchQueue(2)
    assert queue.put("a", 10) == 0 and queue.put("b", 20) == 0
    assert queue.put("c", 30) == 10  # "a" was never trained on: its 10 env steps are dropped
    assert (len(queue), queue.num_batches) == (2, 2)
    assert [queue.get(), queue.get()] == ["b", "c"]
    assert len(queue) == 0 and not queue
    with pytest.raises(IndexError, match="empty queue"):
        queue.get()


def test_a_circular_buffer_hands_each_batch_out_k_times_in_random_order():
    buffer = BatchQueue(3, uses_per_batch=2, random_order=True, seed=0)
    for name in "abc":
        buffer.put(name, 5)
    assert len(buffer) == 6
    drawn = [buffer.get() for _ in range(6)]
    assert sorted(drawn) == ["a", "a", "b", "b", "c", "c"]
    assert drawn != ["a", "a", "b", "b", "c", "c"]  # seed 0 interleaves them
    assert len(buffer) == 0


def test_an_evicted_batch_counts_its_steps_even_after_some_uses():
    buffer = BatchQueue(1, uses_per_batch=3)
    buffer.put("a", 7)
    assert buffer.get() == "a" and len(buffer) == 2
    assert buffer.put("b", 9) == 7
    assert [buffer.get() for _ in range(3)] == ["b", "b", "b"]


def test_state_round_trip_restores_entries_and_draws():
    buffer = BatchQueue(4, uses_per_batch=2, random_order=True, seed=3)
    for name in "abcd":
        buffer.put(name, 1)
    state = buffer.get_state()
    first = [buffer.get() for _ in range(5)]
    buffer.set_state(state)
    assert [buffer.get() for _ in range(5)] == first
    assert len(buffer) == 3
