"""Reporting training results: a live progress bar, TensorBoard / CSV / JSONL files, mp4 videos and
learning-curve plots.

    from flywheel.reporting import default_writers, train_with_progress

    result = train_with_progress(algo, stop_iters=20, writers=default_writers("runs/my_run"))
    plot_runs(["runs/my_run"], "runs/my_run/curves.png")

Importing this package does not import torch (only creating a `TensorBoardWriter` does), imageio
(only writing a video does) or matplotlib (only plotting does).
"""

from flywheel.reporting.loop import default_writers, stop_reason, train_with_progress
from flywheel.reporting.plots import plot_runs
from flywheel.reporting.progress import ProgressBar, describe_result
from flywheel.reporting.videos import VideoWriter, save_video
from flywheel.reporting.writers import (
    RESULTS_CSV,
    RESULTS_JSONL,
    CSVWriter,
    JSONLWriter,
    ResultWriter,
    TensorBoardWriter,
    flatten_result,
)

__all__ = [
    "RESULTS_CSV",
    "RESULTS_JSONL",
    "CSVWriter",
    "JSONLWriter",
    "ProgressBar",
    "ResultWriter",
    "TensorBoardWriter",
    "VideoWriter",
    "default_writers",
    "describe_result",
    "flatten_result",
    "plot_runs",
    "save_video",
    "stop_reason",
    "train_with_progress",
]
