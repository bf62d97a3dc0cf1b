"""Reporting training results: a live progress bar and TensorBoard / CSV / JSONL files.

    from flywheel.reporting import default_writers, train_with_progress

    result = train_with_progress(algo, stop_iters=20, writers=default_writers("runs/my_run"))

Importing this package does not import torch (only creating a `TensorBoardWriter` does).
"""

from flywheel.reporting.loop import stop_reason, train_with_progress
from flywheel.reporting.progress import ProgressBar, describe_result
from flywheel.reporting.writers import (
    RESULTS_CSV,
    RESULTS_JSONL,
    CSVWriter,
    JSONLWriter,
    ResultWriter,
    TensorBoardWriter,
    default_writers,
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
    "default_writers",
    "describe_result",
    "flatten_result",
    "stop_reason",
    "train_with_progress",
]
