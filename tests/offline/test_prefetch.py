"""Prefetching (`input_read_method_kwargs={"prefetch_batches": n}`): the local reader reads train
batches ahead on a background thread, in the order reading in the learner's thread gives; nothing is
lost or read twice, and a reading error is raised in the update."""

import threading

import numpy as np
import pyarrow.parquet as pq
import pytest

from flywheel import BCConfig
from flywheel.errors import OfflineDataError
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
    kwargs = {"batch_size": 30, "shuffle": False, "prefetch_batches": 2}
    reader = OfflineData(reading_config(data, episodes=False, **kwargs), *SPACES)
    read = [episode for _ in range(6) for episode in reader.sample(num_rows=100)]
    reader.stop()
    table = pq.read_table(sorted(data.glob("*.parquet")), columns=["eps_id", "t"])
    expected = list(zip(table.column("eps_id").to_pylist(), table.column("t").to_pylist(), strict=True))
    assert len(expected) == 600
    assert rows(read)[:600] == expected  # one pass: every row once, in the files' order


@pytest.mark.parametrize("prefetch", [1, 2])
def test_same_batches_as_without_prefetch_for_takes_of_any_size(data, prefetch):
    """The thread reads batches of the first take's size; other sizes draw from the same stream."""

    def reader(**kwargs):  # shuffled files, seeded
        config = reading_config(data, episodes=False, batch_size=40, **kwargs).debugging(seed=3)
        return OfflineData(config, *SPACES)

    plain, ahead, sizes = reader(), reader(prefetch_batches=prefetch), (150, 10, 400, 1, 300, 250, 150)
    without = [plain.sample(num_rows=size) for size in sizes]
    with_prefetch = [ahead.sample(num_rows=size) for size in sizes]
    ahead.stop()
    assert [rows(batch) for batch in with_prefetch] == [rows(batch) for batch in without]
    for a, b in zip(sum(without, []), sum(with_prefetch, []), strict=True):
        np.testing.assert_array_equal(a.get_observations(), b.get_observations())
    read = rows(sum(with_prefetch, []))
    assert len(read) >= 1200 and sorted(read[:600]) == sorted(read[600:1200])  # each pass: every row once


def test_prefetch_batches_must_be_a_count(data):
    with pytest.raises(
        OfflineDataError,
        match=r"input_read_method_kwargs\['prefetch_batches'\]=-1, but it must be an int >= 0",
    ):
        OfflineData(reading_config(data, episodes=False, prefetch_batches=-1), *SPACES)


def test_a_reading_error_is_raised_in_the_update_with_its_message(data, tmp_path):
    for path in data.glob("*.parquet"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    config = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(tmp_path), input_read_method_kwargs={"prefetch_batches": 1})
        .training(train_batch_size_per_learner=100, minibatch_size=100)
    )
    algo = config.build_algo()  # checks every file's schema
    broken = sorted(tmp_path.glob("*.parquet"))
    for path in broken:
        path.write_bytes(b"not parquet")
    raised = []
    for _ in range(2):  # the first update reaches it, and every later one raises it again
        with pytest.raises(
            OfflineDataError, match=r"runner0-\w+-\d+\.parquet is not a readable Parquet"
        ) as error:
            algo.train()
        raised.append(str(error.value))
    assert raised[0] == raised[1]
    assert raised[0].split(" ")[0] in {str(path) for path in broken}
    algo.stop()


def test_stop_ends_the_thread(data):
    before = len(prefetch_threads())
    offline = {"input_": str(data), "input_read_method_kwargs": {"prefetch_batches": 1}}
    algo = BCConfig().environment("CartPole-v1").offline_data(**offline).build_algo()
    algo.train()
    assert len(prefetch_threads()) == before + 1
    algo.stop()
    assert len(prefetch_threads()) == before
