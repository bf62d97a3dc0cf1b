"""The offline BC part of bench/RESULTS.md (`report.py` includes it): rows/s into BC's learner from
the same Parquet files, RLlib 2.60 and flywheel side by side."""

from __future__ import annotations

from report import side_by_side


def offline_section() -> list[str]:
    lines = [
        "## Offline BC: rows/s into the learner from Parquet on disk, side by side",
        "",
        "BC on 100k recorded CartPole rows (one row per step, the same files for both), a local learner,",
        "train batch 2000 rows as one minibatch, one update per `train()`, 256x256 network; RLlib maps rows",
        "to episodes in one Ray Data actor (one CPU left for reading on 2 CPUs). Timed `train()` calls in",
        "alternating turns. Higher is better.",
        "",
    ]
    return lines + side_by_side("offline_bc", "rows_per_s", "rows/s", 5.0)
