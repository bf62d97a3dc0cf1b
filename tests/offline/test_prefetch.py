"""Prefetching: the local reader reads the next train batch on a background thread, in the order
reading in turn gives; nothing is lost or read twice, and a reading error is raised in the update."""

import threading

import numpy as np
import pyarrow.parquet as pq
import pytest

from flywheel import BCConfig
from flywheel.offline.reader import OfflineData

from .test_reader import SPACES, reading_config, record


def rows(episodes):
    """(episode id, t) of every step, in order."""
    return [(e.id_, e.t_started + i) for e in episodes for i in range(len(e))]


def prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "flywheel-offline-prefetch" and t.is_alive()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prefetch")
    record(folder, episodes=False, num_timesteps=600, output_max_rows_per_file=100)
    return folder


def test_rows_come_in_file_order_each_once(data):
    reader = OfflineData(reading_config(data, episodes=False, batch_size=30, shuffle=False), *SPACES)
    read = [episode for _ in range(6) for episode in reader.sample(num_rows=100)]
    reader.stop()
    table = pq.read_table(sorted(data.glob("*.parquet")), columns=["eps_id", "t"])
    expected = list(zip(table.column("eps_id").to_pylist(), table.column("t").to_pylist(), strict=True))
    assert len(expected) == 600
    assert rows(read)[:600] == expected  # one pass: every row once, in the files' order


def test_takes_of_any_size_read_the_same_stream(data):
    """The thread reads batches of the first take's size; other sizes draw from the same stream."""
    config = reading_config(data, episodes=False, batch_size=40).debugging(seed=3)  # shuffled, seeded
    one, other = OfflineData(config, *SPACES), OfflineData(config, *SPACES)
    first = [e for _ in range(8) for e in one.sample(num_rows=150)]
    second = [e for size in (150, 10, 400, 1, 300, 250) for e in other.sample(num_rows=size)]
    one.stop(), other.stop()
    count = min(len(rows(first)), len(rows(second)))
    assert count >= 1100 and rows(first)[:count] == rows(second)[:count]
    for a, b in zip(first, second, strict=False):
        np.testing.assert_array_equal(a.get_observations(), b.get_observations())
    assert sorted(rows(first)[:600]) == sorted(rows(first)[600:1200])  # each pass: every row once


def test_a_reading_error_is_raised_in_the_update_with_its_message(data, tmp_path):
    for path in data.glob("*.parquet"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    config = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(tmp_path))
        .training(train_batch_size_per_learner=100, minibatch_size=100)
    )
    algo = config.build_algo()  # checks every file's schema
    broken = sorted(tmp_path.glob("*.parquet"))
    for path in broken:
        path.write_bytes(b"not parquet")
    with pytest.raises(Exception) as original:  # what reading such a file raises, whatever the thread
        pq.ParquetFile(broken[0])
    for _ in range(2):  # the first update reaches it, and every later one raises it again
        with pytest.raises(original.type, match=f"^{original.value}$"):
            algo.train()
    algo.stop()


def test_stop_ends_the_thread(data):
    before = len(prefetch_threads())
    algo = BCConfig().environment("CartPole-v1").offline_data(input_=str(data)).build_algo()
    algo.train()
    assert len(prefetch_threads()) == before + 1
    algo.stop()
    assert len(prefetch_threads()) == before
