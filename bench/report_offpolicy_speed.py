"""The TQC and IQL speed part of bench/RESULTS.md (`report.py` includes it): TQC env steps/s of
`train()` and IQL rows/s of offline `train()`, RLlib 2.60 and flywheel side by side."""

from __future__ import annotations

from report import side_by_side


def offpolicy_speed_section() -> list[str]:
    return [
        "## TQC and IQL: `train()` throughput at RLlib 2.60's settings, side by side",
        "",
        "`bench/offpolicy_speed.py`. TQC: Pendulum-v1, RLlib's defaults on both sides (25 quantiles, 2",
        "critics, 2 dropped per net, train batch 256, one update per env step, 100 env steps a",
        "`train()`), one env, no remote runners or learners, timed after learning starts. IQL: 20k",
        "Pendulum rows on disk (the same Parquet files for both), RLlib's defaults, train batch 256, one",
        "update per `train()`, no evaluation. Learners on the same torch threads. Timed `train()` calls",
        "in alternating turns. Higher is better.",
        "",
        "### TQC env steps/s",
        "",
        *side_by_side("tqc_speed", "env_steps_per_s", "env steps/s", 3.0),
        "",
        "### IQL rows/s (updates/s x 256)",
        "",
        *side_by_side("iql_speed", "rows_per_s", "rows/s", 3.0),
    ]
