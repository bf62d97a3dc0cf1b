"""Learning curves: labels, seed groups, mean and band, the image."""

import csv

import numpy as np
import pytest

from flywheel.errors import FlywheelError
from flywheel.reporting.plots import (
    Curve,
    find_runs,
    group_by_label,
    load_curve,
    mean_and_band,
    plot_runs,
    run_label,
)


def write_run(path, rows, metric="env_runners/episode_return_mean"):
    """A run dir whose results.csv has (env steps, seconds, metric) rows."""
    path.mkdir(parents=True)
    with (path / "results.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["training_iteration", "num_env_steps_sampled_lifetime", "time_total_s", metric])
        for i, row in enumerate(rows, start=1):
            writer.writerow([i, *row])
    return path


def test_labels_drop_a_trailing_seed_suffix(tmp_path):
    assert [run_label(tmp_path / n) for n in ("ppo_seed0", "ppo-seed12", "ppo_s3", "ppo_seeds", "ppo")] == [
        "ppo", "ppo", "ppo", "ppo_seeds", "ppo",
    ]  # fmt: skip


def test_folders_stand_for_their_runs_and_runs_group_by_label(tmp_path):
    a = write_run(tmp_path / "sweep" / "ppo_seed0", [(10, 1.0, 1.0)])
    b = write_run(tmp_path / "sweep" / "ppo_seed1", [(10, 1.0, 2.0)])
    c = write_run(tmp_path / "dqn", [(10, 1.0, 3.0)])
    runs = find_runs([tmp_path / "sweep", c])
    assert runs == [a, b, c]
    assert group_by_label(runs) == {"ppo": [a, b], "dqn": [c]}
    assert group_by_label(runs, ["x", "y", "x"]) == {"x": [a, c], "y": [b]}
    with pytest.raises(FlywheelError, match=r"--labels gave 1 labels for 3 runs"):
        group_by_label(runs, ["x"])
    with pytest.raises(FlywheelError, match=r"holds no results.csv \(nor do its sub-directories\)"):
        find_runs([tmp_path / "nothing"])


def test_a_curve_skips_rows_before_the_first_episode(tmp_path):
    run = write_run(tmp_path / "r", [(10, 1.0, "nan"), (20, 2.0, 4.0), (30, 3.0, 6.0)])
    curve = load_curve(run)
    assert curve.y.tolist() == [4.0, 6.0]
    assert curve.xs["num_env_steps_sampled_lifetime"].tolist() == [20.0, 30.0]
    with pytest.raises(FlywheelError, match=r"has no column 'evaluation/env_runners/episode_return_mean'"):
        load_curve(run, "evaluation/env_runners/episode_return_mean")


def test_seeds_average_on_the_span_all_of_them_reached():
    axis = "num_env_steps_sampled_lifetime"
    one = Curve(None, {axis: np.array([0.0, 100.0])}, np.array([0.0, 10.0]))
    two = Curve(None, {axis: np.array([0.0, 50.0, 200.0])}, np.array([2.0, 4.0, 4.0]))
    grid, mean, low, high = mean_and_band([one, two], axis)
    assert (grid[0], grid[-1], len(grid)) == (0.0, 100.0, 200)
    assert (mean[0], low[0], high[0]) == (1.0, 0.0, 2.0)
    assert (mean[-1], low[-1], high[-1]) == (7.0, 4.0, 10.0)


def test_plot_runs_draws_a_png(tmp_path):
    write_run(tmp_path / "runs" / "ppo_seed0", [(10, 1.0, 1.0), (20, 2.0, 3.0)])
    write_run(tmp_path / "runs" / "ppo_seed1", [(10, 1.5, 2.0), (20, 2.5, 2.0)])
    out = plot_runs([tmp_path / "runs"], tmp_path / "out" / "curves.png")
    assert out == str(tmp_path / "out" / "curves.png")
    assert (tmp_path / "out" / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
