"""Row shuffling (`iter_batches_kwargs={"local_shuffle_buffer_size": n}`): every row once, in random
order, through a bounded buffer; CQL shuffles by default; bad values are named."""

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pytest

from flywheel import BCConfig, CQLConfig, MARWILConfig, SACConfig, SingleAgentEnvRunner, SingleAgentEpisode
from flywheel.errors import ConfigError, OfflineDataError
from flywheel.offline.reader import OfflineData
from flywheel.offline.shuffle import shuffled, shuffled_steps

PENDULUM = gym.make("Pendulum-v1")
SPACES = (PENDULUM.observation_space, PENDULUM.action_space)


def numbered_batches(num_rows, batch_rows, consumed):
    """Record batches of the row numbers 0..num_rows-1; `consumed[0]` counts the rows taken so far."""
    for start in range(0, num_rows, batch_rows):
        rows = np.arange(start, min(start + batch_rows, num_rows))
        consumed[0] += len(rows)
        yield pa.record_batch({"row": rows})


def test_every_row_comes_out_once_in_random_order_through_a_bounded_buffer():
    consumed = [0]
    rows, held = [], []
    for batch in shuffled(numbered_batches(10_000, 100, consumed), 1000, np.random.default_rng(0), 64):
        assert batch.num_rows <= 64
        rows += batch.column("row").to_pylist()
        held.append(consumed[0] - len(rows))
    assert sorted(rows) == list(range(10_000))
    assert max(held) <= 2 * 1000  # rows read but not yet handed out: at most twice the buffer
    assert held[0] >= 1000  # the first batch leaves a full buffer behind
    # Far from stored order: consecutive output rows are hundreds of rows apart in the input.
    assert np.median(np.abs(np.diff(rows))) > 300


def test_the_same_seed_gives_the_same_order():
    def order(seed):
        stream = shuffled(numbered_batches(500, 50, [0]), 100, np.random.default_rng(seed), 500)
        return [row for batch in stream for row in batch.column("row").to_pylist()]

    assert order(3) == order(3) != order(4)


def test_the_steps_of_whole_episodes_come_out_once_each_as_one_step_chunks():
    def episode(id_, length, terminated):
        return SingleAgentEpisode(
            id_=id_,
            observations=[[float(t)] for t in range(length + 1)],
            actions=list(range(length)),
            rewards=[float(t) for t in range(length)],
            terminated=terminated,
            truncated=not terminated,
            len_lookback_buffer=0,
        )

    episodes = [episode("a", 30, True), episode("b", 50, False), episode("c", 20, True)]
    chunks = list(shuffled_steps(iter(episodes), 10, np.random.default_rng(0)))

    handed = [(chunk.id_, chunk.t_started) for chunk in chunks]
    stored = [(e.id_, t) for e in episodes for t in range(len(e))]
    assert sorted(handed) == sorted(stored) and handed != stored
    for chunk in chunks:
        t, last = chunk.t_started, chunk.t_started == {"a": 29, "b": 49, "c": 19}[chunk.id_]
        assert (
            len(chunk) == 1
            and np.asarray(chunk.get_actions()).tolist() == [t]
            and np.asarray(chunk.get_rewards()).tolist() == [t]
        )
        assert np.asarray(chunk.get_observations()).tolist() == [[t], [t + 1]]
        assert (chunk.is_terminated, chunk.is_truncated) == (
            last and chunk.id_ != "b",
            last and chunk.id_ == "b",
        )


@pytest.fixture(scope="module")
def pendulum_rows(tmp_path_factory):
    """1,000 Pendulum steps (5 episodes) of an untrained SAC policy, one row per step."""
    folder = tmp_path_factory.mktemp("pendulum")
    config = SACConfig().environment("Pendulum-v1").debugging(seed=0)
    runner = SingleAgentEnvRunner(config=config.offline_data(output=str(folder), output_write_episodes=False))
    runner.sample(num_episodes=5)
    runner.stop()
    return str(folder)


def steps(episodes):
    return [(e.id_, t) for e in episodes for t in range(e.t_started, e.t_started + len(e))]


def test_cql_reads_shuffled_rows_by_default_and_stored_order_when_turned_off(pendulum_rows):
    config = CQLConfig().environment("Pendulum-v1").offline_data(input_=pendulum_rows).debugging(seed=0)
    shuffled_read = OfflineData(config, *SPACES).sample(num_rows=256)
    assert len({e.id_ for e in shuffled_read}) == 5  # rows of every recorded episode in one batch
    assert len(shuffled_read) >= 240  # nearly all single rows

    config.offline_data(
        iter_batches_kwargs={"local_shuffle_buffer_size": None}, input_read_method_kwargs={"shuffle": False}
    )
    stored = OfflineData(config, *SPACES).sample(num_rows=256)
    assert [len(e) for e in stored] == [200, 200]  # two whole consecutive episodes


def test_a_pass_of_shuffled_rows_holds_each_row_once(pendulum_rows):
    # Buffer 500 (2 x 500 = the whole 1,000 rows): the first 500 rows handed out are distinct.
    config = (
        BCConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=pendulum_rows, iter_batches_kwargs={"local_shuffle_buffer_size": 500})
        .debugging(seed=1)
    )
    read = steps(OfflineData(config, *SPACES).sample(num_rows=500))
    assert len(read) == len(set(read)) == 500
    assert read != sorted(read)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"local_shuffle_buffer_size": 0},
            r"iter_batches_kwargs\['local_shuffle_buffer_size'\]=0 must be an int >= 1 \(rows in the shuffle "
            r"buffer\) or None \(no shuffling\)\. Fix: config\.offline_data\(iter_batches_kwargs=",
        ),
        (
            {"local_shuffle_buffer_size": True},
            r"iter_batches_kwargs\['local_shuffle_buffer_size'\]=True must be an int >= 1",
        ),
        (
            {"prefetch_batches": -1},
            r"iter_batches_kwargs\['prefetch_batches'\]=-1 must be an int >= 0 \(train batches read ahead\)",
        ),
        (
            {"local_shuffle_seed": "zero"},
            r"iter_batches_kwargs\['local_shuffle_seed'\]='zero' must be an int or None",
        ),
    ],
)
def test_bad_shuffle_values_are_named(pendulum_rows, kwargs, message):
    config = (
        CQLConfig().environment("Pendulum-v1").offline_data(input_=pendulum_rows, iter_batches_kwargs=kwargs)
    )
    with pytest.raises(ConfigError, match=message):
        config.validate()


def test_files_of_whole_episode_chunks_are_not_shuffled_by_step(pendulum_rows):
    config = (
        CQLConfig().environment("Pendulum-v1").offline_data(input_=pendulum_rows, input_read_episodes=True)
    )
    with pytest.raises(
        ConfigError,
        match=r"iter_batches_kwargs\['local_shuffle_buffer_size'\]=10000 shuffles single steps, but "
        r"input_read_episodes=True reads files with one row per episode chunk, whose steps stay together\. "
        r"Fix: record one row per step \(config\.offline_data\(output_write_episodes=False\)\)",
    ):
        config.validate()
    config.offline_data(iter_batches_kwargs={"local_shuffle_buffer_size": None}).validate()


def test_iter_batches_kwargs_must_be_a_dict(pendulum_rows):
    config = CQLConfig().environment("Pendulum-v1").offline_data(input_=pendulum_rows, iter_batches_kwargs=5)
    with pytest.raises(ConfigError, match=r"iter_batches_kwargs=5 must be a dict"):
        config.validate()


def test_the_local_reader_reads_ahead_with_ray_datas_prefetch_batches_in_the_same_order(pendulum_rows):
    config = CQLConfig().environment("Pendulum-v1").offline_data(input_=pendulum_rows).debugging(seed=0)
    inline = steps(OfflineData(config, *SPACES).sample(num_rows=300))
    ahead = OfflineData(config.offline_data(iter_batches_kwargs={"prefetch_batches": 2}), *SPACES)
    assert steps(ahead.sample(num_rows=300)) == inline
    ahead.stop()


def test_the_local_reader_names_keys_only_ray_data_takes(pendulum_rows):
    config = (
        CQLConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=pendulum_rows, iter_batches_kwargs={"drop_last": True})
    )
    with pytest.raises(
        OfflineDataError,
        match=r"iter_batches_kwargs has the key\(s\) \['drop_last'\], which only Ray Data's iter_batches takes",
    ):
        OfflineData(config, *SPACES)


def test_marwil_refuses_shuffled_rows_but_bc_takes_them(pendulum_rows):
    shuffle = {"local_shuffle_buffer_size": 100}
    marwil = (
        MARWILConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=pendulum_rows, iter_batches_kwargs=shuffle)
    )
    with pytest.raises(
        ConfigError, match=r"MARWIL with beta=1\.0 computes its advantages along whole episodes"
    ):
        marwil.validate()
    BCConfig().environment("Pendulum-v1").offline_data(
        input_=pendulum_rows, iter_batches_kwargs=shuffle
    ).validate()
