"""The APPO part of bench/RESULTS.md (`report.py` includes it): throughput side by side, scaling with
runners on this machine and, on paper, at 16 and 64 runners, and wall-clock to a last-100 mean of 450."""

from __future__ import annotations

import math
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
    return lines + side_by_side("appo_throughput", "steps_per_s", "steps/s", 5.0) + ["", *_ceiling_lines()]


def _ceiling_lines() -> list[str]:
    """What the target asks of this 2-core machine, from flywheel's measured CPU costs per step."""
    mine = [r for r in load("appo_throughput_flywheel.jsonl") if "learner_cpu_us_per_trained_step" in r]
    peer = [r for r in load("appo_throughput_rllib.jsonl") if "steps_per_s" in r]
    rllib = median([r["steps_per_s"] for r in peer])
    costs = [_median_of(mine, key) for key, _ in _COST_COLUMNS[1:]]
    if not mine or rllib is None or not all(costs):
        return ["The 2-core ceiling: not measured."]
    loop, runners, learner, passes = costs
    learning = learner * passes
    total = loop + runners + learning
    needed = 5 * rllib
    busy = median([r["steps_per_s"] for r in mine]) * total / 2e6  # of the two cores, in the turns above
    return [
        "The ceiling on this machine: flywheel spends, per env step sampled (CPU µs, medians of the runs",
        f"above), {runners:.1f} in the runners + {loop:.1f} in the driver's loop + {learner:.1f} × {passes:.2f} passes",
        f"= {learning:.1f} learning = {total:.1f} µs. Two cores doing nothing else give at most 2e6 / {total:.1f} =",
        f"{fmt(2e6 / total)} env steps/s, and the driver, which also learns, at most 1e6 / {loop + learning:.1f} =",
        f"{fmt(1e6 / (loop + learning))}. 5× RLlib's {fmt(rllib)} is {fmt(needed)} env steps/s: "
        f"{needed / min(2e6 / total, 1e6 / (loop + learning)):.0%} of that ceiling. With the cores as busy as in",
        f"the turns above ({busy:.0%}), it needs at most {busy * 2e6 / needed:.1f} µs per step in all.",
        *_peer_passes_line(peer, loop + runners, learner),
    ]


def _peer_passes_line(peer: list[dict[str, Any]], other: float, learner: float) -> list[str]:
    """How RLlib's passes per sampled step change the picture (its learner thread falls behind and its
    circular buffer drops batches before their K uses)."""
    passes = _median_of(peer, "trained_per_sampled_step")
    if passes is None:
        return []
    total = other + learner * passes
    return [
        f"RLlib trained {passes:.2f} steps per step sampled (its circular buffer evicts batches its learner",
        f"thread has not used K times); at that many passes flywheel's costs would total {total:.1f} µs per",
        f"step, a two-core ceiling of {fmt(2e6 / total)} env steps/s.",
    ]


_COST_COLUMNS = (
    ("driver_cpu_us_per_step", "driver, all"),
    ("driver_loop_cpu_us_per_step", "driver without the learner"),
    ("runner_cpu_us_per_step", "runners"),
    ("learner_cpu_us_per_trained_step", "learner, per step trained"),
    ("trained_per_sampled_step", "steps trained per step sampled"),
)


def _scaling_lines() -> list[str]:
    rows = [r for r in load("appo_scaling_flywheel.jsonl") if "steps_per_s" in r]
    lines = [
        "### How flywheel's APPO scales with runners on this 2-core machine",
        "",
        "CPU µs per env step sampled (CPU time, not wall-clock, so other load on the machine weighs less;",
        "the learner updates in the driver, `num_learners=0`; 0 runners: the driver also samples).",
        "",
        "| remote runners | median steps/s | " + " | ".join(title for _, title in _COST_COLUMNS) + " |",
        "|---:|---:|" + "---:|" * len(_COST_COLUMNS),
    ]
    for n in sorted({r["num_env_runners"] for r in rows}):
        mine = [r for r in rows if r["num_env_runners"] == n]
        cells = [
            fmt(_median_of(mine, key), 3 if key == "trained_per_sampled_step" else 1)
            for key, _ in _COST_COLUMNS
        ]
        lines.append(f"| {n} | {fmt(median([r['steps_per_s'] for r in mine]))} | " + " | ".join(cells) + " |")
    lines += ["", *_projection([r for r in rows if r["num_env_runners"] >= 1])]
    return lines


def projected_steps_per_s(runners: int, learners: int, costs: dict[str, float]) -> tuple[float, str]:
    """Env steps/s of `runners` runners and `learners` remote learners (0: the learner in the driver),
    each on a core of its own, from CPU µs per env step sampled (`runner`, `driver`: the driver
    without learning, `learner`: learning one sampled step, all its passes); and what caps it."""
    caps = {"runners": runners * 1e6 / costs["runner"]}
    if learners:
        caps["driver"] = 1e6 / costs["driver"]
        caps["learners"] = learners * 1e6 / costs["learner"]
    else:
        caps["driver (learning in it)"] = 1e6 / (costs["driver"] + costs["learner"])
    bottleneck = min(caps, key=caps.__getitem__)
    return caps[bottleneck], bottleneck


def _projection(rows: list[dict[str, Any]]) -> list[str]:
    """On paper, from the measured CPU costs: see `projected_steps_per_s`."""
    runner = _median_of(rows, "runner_cpu_us_per_step")
    driver = _median_of(rows, "driver_loop_cpu_us_per_step")
    learner = _median_of(rows, "learner_cpu_us_per_trained_step")
    passes = _median_of(rows, "trained_per_sampled_step")
    if not (runner and driver and learner and passes):
        return ["On paper: not measured."]
    costs = {"runner": runner, "driver": driver, "learner": learner * passes}
    lines = [
        "On paper, with a core for each process (medians over the runs with remote runners): a runner",
        f"samples 1e6 / {runner:.1f} µs = {fmt(1e6 / runner)} env steps/s; the driver's own loop (collecting",
        f"fragments, metrics, posting weights) takes {driver:.1f} µs per step, at most {fmt(1e6 / driver)} steps/s;",
        f"learning takes {learner:.1f} µs per step trained × {passes:.2f} passes = {learner * passes:.1f} µs per step",
        f"sampled, {fmt(1e6 / (learner * passes))} steps/s per learner. Env steps/s = min(runners / runner cost,",
        "1 / driver cost, learners / learner cost), with the learner in the driver or just enough remote ones:",
        "",
        "| runners | learners | cores | env steps/s | bottleneck |",
        "|---:|---:|---:|---:|---|",
    ]
    for n in (16, 64):
        allowed = min(n * 1e6 / runner, 1e6 / driver)  # what the runners and the driver's loop allow
        for learners in (0, math.ceil(allowed * costs["learner"] / 1e6)):  # none; just enough
            rate, bottleneck = projected_steps_per_s(n, learners, costs)
            lines.append(f"| {n} | {learners} | {n + learners + 1} | {fmt(rate)} | {bottleneck} |")
    return [
        *lines,
        "",
        "The learner in the driver (`num_learners=0`) caps the throughput whatever the runners; remote",
        "learners (`num_learners=L`, each on a core or GPU) lift that until the driver's own loop caps it.",
        "That loop's cost is mostly per fragment and per update, so larger fragments",
        "(`rollout_fragment_length`, `num_envs_per_env_runner`) and train batches lower it, and so does a",
        "`broadcast_interval` above 1 (fewer weight posts); fewer passes (`circular_buffer_iterations_per_batch`)",
        "lower the learners' cost. Not counted: with remote learners the driver also ships each train batch",
        "to them, and waiting on 64 runners' calls costs more per call than on 2.",
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
