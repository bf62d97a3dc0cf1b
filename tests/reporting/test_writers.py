"""Result writers: flattened keys, CSV header widening, JSONL NaN -> null, TensorBoard scalars."""

import json
import math

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from flywheel.reporting import (
    CSVWriter,
    JSONLWriter,
    TensorBoardWriter,
    default_writers,
    flatten_result,
)


def result(iteration, ret, **extra):
    return {
        "env_runners": {"episode_return_mean": ret, "num_env_steps_sampled": 100},
        "learners": {"default_policy": {"total_loss": 0.5 * iteration}},
        "training_iteration": iteration,
        **extra,
    }


def test_flatten_result_joins_nested_keys_with_slashes():
    nested = {"a": {"b": {"c": 1}, "d": "x"}, "e": [1, 2], "f": None}
    assert flatten_result(nested) == {"a/b/c": 1, "a/d": "x", "e": [1, 2], "f": None}
    assert flatten_result({"a": {"b": 1}}, sep=".") == {"a.b": 1}
    assert flatten_result({}) == {}


def test_csv_header_is_the_first_results_keys_and_rows_follow_it(tmp_path):
    path = tmp_path / "out" / "results.csv"
    with CSVWriter(path) as writer:
        writer.write(result(1, 10.0))
        writer.write(result(2, 12.5))
    assert path.read_text().splitlines() == [
        "env_runners/episode_return_mean,env_runners/num_env_steps_sampled,"
        "learners/default_policy/total_loss,training_iteration",
        "10.0,100,0.5,1",
        "12.5,100,1.0,2",
    ]


def test_csv_new_keys_become_new_last_columns_and_missing_keys_empty_cells(tmp_path):
    path = tmp_path / "results.csv"
    writer = CSVWriter(path)
    writer.write({"a": 1, "b": 2})
    writer.write({"a": 3, "b": 4, "evaluation": {"ret": 9.5}})  # new key: file rewritten wider
    writer.write({"b": 6, "c": None})  # "a" and "evaluation/ret" missing; "c" new and None
    assert writer.fieldnames == ["a", "b", "evaluation/ret", "c"]
    writer.close()
    assert path.read_text().splitlines() == ["a,b,evaluation/ret,c", "1,2,,", "3,4,9.5,", ",6,,"]
    assert not (tmp_path / "results.csv.tmp").exists()


def test_csv_rows_are_flushed_after_each_result(tmp_path):
    path = tmp_path / "results.csv"
    writer = CSVWriter(path)
    writer.write({"a": 1})
    assert path.read_text() == "a\n1\n"  # readable while the run goes on
    writer.write({"a": 2, "b": 3})
    assert path.read_text() == "a,b\n1,\n2,3\n"
    writer.close()


def test_jsonl_one_nested_line_per_result_with_nan_as_null(tmp_path):
    path = tmp_path / "results.jsonl"
    with JSONLWriter(path) as writer:
        writer.write(result(1, math.nan))
        with pytest.warns(UserWarning) as caught:
            writer.write(
                {
                    "x": np.float32(1.5),
                    "n": np.int64(3),
                    "inf": -math.inf,
                    "arr": np.array([1.0, np.inf]),
                    "t": (1, -math.inf),
                    "flag": np.bool_(True),
                    "obj": object,
                    "p": {50: 2.0},
                    7: "int key",
                }
            )
    assert [str(w.message) for w in caught] == [
        "JSONLWriter skips 'arr', 't', 'obj': this file holds numbers, strings and None only (TensorBoard "
        "draws images, videos and lists)."
    ]
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0]) == {
        "env_runners": {"episode_return_mean": None, "num_env_steps_sampled": 100},
        "learners": {"default_policy": {"total_loss": 0.5}},
        "training_iteration": 1,
    }
    assert json.loads(lines[1]) == {
        "x": 1.5,
        "n": 3,
        "inf": None,
        "flag": True,
        "p": {"50": 2.0},
        "7": "int key",
    }
    assert "NaN" not in path.read_text()


def test_csv_skips_non_scalars_with_one_warning_per_key(tmp_path):
    path = tmp_path / "results.csv"
    with CSVWriter(path) as writer:
        with pytest.warns(
            UserWarning, match=r"^CSVWriter skips 'env_runners/frames': this file holds numbers"
        ):
            writer.write({"a": 1, "env_runners": {"frames": np.zeros((2, 3, 4, 4))}})
        with pytest.warns(UserWarning) as caught:
            writer.write({"a": 2, "env_runners": {"frames": np.zeros((2, 3, 4, 4))}, "actions": [0, 1]})
        assert [str(w.message).split(":")[0] for w in caught] == ["CSVWriter skips 'actions'"]
    assert path.read_text().splitlines() == ["a", "1", "2"]


def test_tensorboard_scalars_tagged_by_flattened_key_stepped_by_iteration(tmp_path):
    with TensorBoardWriter(tmp_path) as writer:
        writer.write(result(1, 10.0, note="text is skipped", nothing=None))
        writer.write(result(2, math.nan))
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == [
        "env_runners/episode_return_mean",
        "env_runners/num_env_steps_sampled",
        "learners/default_policy/total_loss",
        "training_iteration",
    ]
    returns = events.Scalars("env_runners/episode_return_mean")
    assert [r.step for r in returns] == [1, 2]
    assert returns[0].value == 10.0 and math.isnan(returns[1].value)
    assert [s.value for s in events.Scalars("learners/default_policy/total_loss")] == [0.5, 1.0]


def test_tensorboard_step_key_can_be_another_counter(tmp_path):
    with TensorBoardWriter(tmp_path, step_key="env_runners/num_env_steps_sampled") as writer:
        writer.write(result(1, 10.0))
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [s.step for s in events.Scalars("training_iteration")] == [100]


def test_tensorboard_missing_step_key_says_which_keys_exist(tmp_path):
    with (
        TensorBoardWriter(tmp_path) as writer,
        pytest.raises(
            ValueError,
            match=r"TensorBoardWriter expected the result to contain the step counter 'training_iteration', "
            r"but its keys are \['a/b', 'c'\]\. Fix: pass step_key=<one of those counters>\.",
        ),
    ):
        writer.write({"c": 1, "a": {"b": 2}})


def test_default_writers_put_the_three_result_formats_and_videos_in_the_run_dir(tmp_path):
    run_dir = tmp_path / "run"
    writers = default_writers(run_dir)
    assert [type(w).__name__ for w in writers] == [
        "TensorBoardWriter",
        "CSVWriter",
        "JSONLWriter",
        "VideoWriter",
    ]
    assert writers[-1].video_dir == run_dir / "videos"
    for writer in writers:
        writer.write(result(1, 5.0))
        writer.close()
    names = sorted(p.name for p in run_dir.iterdir())
    assert len(names) == 3 and names[0].startswith("events.out.tfevents.")
    assert names[1:] == ["results.csv", "results.jsonl"]


def test_default_writers_in_a_used_run_dir_start_a_fresh_run(tmp_path):
    # `make train` twice into runs/cartpole: TensorBoard must not draw both runs as one.
    for run, iterations in enumerate([3, 1]):
        writers = default_writers(tmp_path)
        for i in range(iterations):
            for writer in writers:
                writer.write(result(i + 1, 10.0 * (run + 1)))
        for writer in writers:
            writer.close()
    (events,) = tmp_path.glob("events.out.tfevents.*")
    scalars = EventAccumulator(str(events)).Reload().Scalars("training_iteration")
    assert [s.value for s in scalars] == [1.0]  # the second run's one iteration only
    assert (tmp_path / "results.csv").read_text().count("\n") == 2
