"""The offline BC part of bench/RESULTS.md (`report.py` includes it): rows/s into BC's learner from
the same Parquet files, RLlib 2.60 and flywheel side by side, and the bare-torch compute floor."""

from __future__ import annotations

from report import errors_of, fmt, load, median, ratio_cell, side_by_side


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
    return lines + side_by_side("offline_bc", "rows_per_s", "rows/s", 5.0) + floor_lines()


def floor_lines() -> list[str]:
    """The bare-torch floor (`--framework torch_floor`, in the same turns): the same updates on rows
    held in memory, as a multiple of RLlib's rows/s in the same repeat."""
    rows = {fw: load(f"offline_bc_{fw}.jsonl") for fw in ("rllib", "flywheel", "torch_floor")}
    ok = {fw: [r for r in rs if "rows_per_s" in r] for fw, rs in rows.items()}
    if not rows["torch_floor"]:
        return []
    floors = [r["rows_per_s"] for r in ok["torch_floor"]]
    per_rllib = [f / r["rows_per_s"] for r, f in zip(ok["rllib"], floors, strict=False)]
    per_flywheel = [f["rows_per_s"] / t for f, t in zip(ok["flywheel"], floors, strict=False)]
    threads = sorted({r.get("torch_threads") for r in ok["torch_floor"]} - {None})
    return [
        "",
        f"Compute floor (bare torch, the same network, Adam and loss on 2000-row batches in memory, no "
        f"reading, torch threads {threads or '—'}): median {fmt(median(floors))} rows/s "
        f"({', '.join(fmt(x) for x in floors)}); floor / RLlib {ratio_cell(median(per_rllib))}, "
        f"flywheel / floor {ratio_cell(median(per_flywheel))}. No framework passes the floor: a target "
        f"above floor / RLlib is out of reach on this machine at these settings.",
    ] + ([""] + errors if (errors := errors_of(rows["torch_floor"], "torch floor")) else [])
