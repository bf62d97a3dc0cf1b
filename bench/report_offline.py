"""The offline BC part of bench/RESULTS.md (`report.py` includes it): rows/s into BC's learner from
the same Parquet files, RLlib 2.60 and flywheel side by side."""

from __future__ import annotations

from report import NAMES, errors_of, fmt, load, median, ratio_cell


def offline_section() -> list[str]:
    lines = [
        "## Offline BC: rows/s into the learner from Parquet on disk, side by side",
        "",
        "BC on 100k recorded CartPole rows (one row per step, the same files for both), a local learner,",
        "train batch 2000 rows as one minibatch, one update per `train()`, 256x256 network; RLlib maps rows",
        "to episodes in one Ray Data actor (one CPU left for reading on 2 CPUs). Timed `train()` calls in",
        "alternating turns. Higher is better.",
        "",
        "| framework | median rows/s | per repeat |",
        "|---|---:|---|",
    ]
    rows = {fw: load(f"offline_bc_{fw}.jsonl") for fw in ("rllib", "flywheel")}
    errors = [e for fw, r in rows.items() for e in errors_of(r, NAMES[fw])]
    ok = {fw: [r for r in rs if "rows_per_s" in r] for fw, rs in rows.items()}
    for fw, rs in ok.items():
        per = ", ".join(fmt(r["rows_per_s"]) for r in rs)
        lines.append(f"| {NAMES[fw]} | {fmt(median([r['rows_per_s'] for r in rs]))} | {per or '—'} |")
    ratios = [f["rows_per_s"] / r["rows_per_s"] for r, f in zip(ok["rllib"], ok["flywheel"], strict=False)]
    lines += [
        "",
        f"flywheel / RLlib: {ratio_cell(median(ratios), 5.0)} (median of per-repeat ratios "
        f"{', '.join(f'{x:.2f}' for x in ratios) or '—'}; target ≥ 5×)",
    ]
    return lines + ([""] + errors if errors else [])
