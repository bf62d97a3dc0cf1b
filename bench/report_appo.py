"""The APPO part of bench/RESULTS.md (`report.py` includes it): throughput side by side, scaling with
runners on this machine and, on paper, at 16 and 64 runners, and wall-clock to a last-100 mean of 450."""

from __future__ import annotations

from typing import Any

from report import NAMES, errors_of, fmt, load, median, ratio_cell, side_by_side

SETTINGS = ("rllib", "flywheel")


def appo_section() -> list[str]:
    return [*_throughput_lines(), "", *_scaling_lines(), "", *_to450_lines()]


def _throughput_lines() -> list[str]:
    lines = [
        "## APPO: CartPole-v1 `train()` env steps/s with 2 remote runners, side by side",
        "",
        "Both with RLlib's tuned CartPole APPO settings (8 sub-envs per runner, train batch 500, K=2,",
        "2x256 network with shared value layers), the learner in the driver, runners of 0.5 CPU in a",
        "2-CPU Ray each; timed `train()` calls in alternating turns. Per-repeat ratio: flywheel's turns",
        "over RLlib's turns of the same repeat. Higher is better.",
        "",
    ]
    return lines + side_by_side("appo_throughput", "steps_per_s", "steps/s", 5.0)


def _scaling_lines() -> list[str]:
    rows = [r for r in load("appo_scaling_flywheel.jsonl") if "steps_per_s" in r]
    lines = [
        "### How flywheel's APPO scales with runners on this 2-core machine",
        "",
        "| remote runners | median steps/s | driver CPU µs per step | runner µs per step (sample()) | learner µs per trained step |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in sorted({r["num_env_runners"] for r in rows}):
        mine = [r for r in rows if r["num_env_runners"] == n]
        lines.append(
            f"| {n} | {fmt(median([r['steps_per_s'] for r in mine]))} "
            f"| {fmt(_median_of(mine, 'driver_cpu_us_per_step'), 1)} | {fmt(_median_of(mine, 'runner_us_per_step'), 1)} "
            f"| {fmt(_median_of(mine, 'learner_us_per_trained_step'), 1)} |"
        )
    lines += ["", *_projection(rows)]
    return lines


def _projection(rows: list[dict[str, Any]]) -> list[str]:
    """On paper: N runners on N cores of their own sample N / runner_cost steps/s; the driver (one
    core) handles at most 1 / (driver CPU per step) of them; APPO trains K=2 times what it keeps."""
    one = [r for r in rows if r["num_env_runners"] == 1]
    runner = _median_of(one, "runner_us_per_step")
    driver = _median_of([r for r in rows if r["num_env_runners"] == 2], "driver_cpu_us_per_step")
    if not runner or not driver:
        return ["On paper: not measured."]
    cap = 1e6 / driver
    cells = [f"{n} runners: {fmt(min(n * 1e6 / runner, cap))} steps/s" for n in (16, 64)]
    return [
        f"On paper, from the 1-runner sample() cost ({runner:.1f} µs per env step, measured while sharing",
        "two cores, so an upper bound of the cost on a core of its own) and the driver's CPU per step at 2",
        f"runners ({driver:.1f} µs: collecting samples, learning, posting weights): N runners sample",
        f"N × {fmt(1e6 / runner)} steps/s until the single driver caps at {fmt(cap)} steps/s: "
        + "; ".join(cells)
        + ". Beyond the cap, more learners (`num_learners`) or a GPU learner are needed; what a",
        "full queue cannot take is dropped (counted in `num_env_steps_dropped`).",
    ]


def _to450_lines() -> list[str]:
    lines = [
        "### APPO: wall-clock to a last-100 mean of 450 (2 remote runners)",
        "",
        "Training seconds (from the first `train()` call) and env steps to the threshold; each framework",
        "with RLlib's tuned settings and with flywheel's (lr 1e-3, K=4, minibatches of 250, 64x64), runs",
        "interleaved, the repeat number as seed. Lower is better; `—`: not reached within --max-seconds.",
        "",
        "| framework | settings | median seconds | per repeat (seconds @ env steps) |",
        "|---|---|---:|---|",
    ]
    best: dict[str, float | None] = {}
    errors: list[str] = []
    for fw in ("rllib", "flywheel"):
        rows = load(f"appo_to450_{fw}.jsonl")
        errors += errors_of(rows, NAMES[fw])
        for setting in SETTINGS:
            runs = [r for r in rows if r.get("settings") == setting and "error" not in r]
            secs = [r["to_450"]["train_seconds"] if r.get("to_450") else None for r in runs]
            reached = [s for s in secs if s is not None]
            med = median(reached) if len(reached) == len(secs) and secs else None
            per = ", ".join(
                f"{r['to_450']['train_seconds']:.0f} s @ {r['to_450']['env_steps']:,}"
                if r.get("to_450")
                else "—"
                for r in runs
            )
            lines.append(f"| {NAMES[fw]} | {setting} | {fmt(med)} | {per or '—'} |")
            if med is not None and (best.get(fw) is None or med < best[fw]):
                best[fw] = med
    ratio = best["rllib"] / best["flywheel"] if best.get("rllib") and best.get("flywheel") else None
    lines += ["", f"RLlib's best median / flywheel's best median: {ratio_cell(ratio, 3.0)} (target ≥ 3×)"]
    return lines + ([""] + errors if errors else [])


def _median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    return median([r[key] for r in rows if r.get(key) is not None])
