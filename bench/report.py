"""Writes bench/RESULTS.md from the raw JSON lines in bench/results/.

Run by run.sh after the benchmarks; run it alone to regenerate the report from saved results
(e.g. after re-measuring only flywheel). Ratios are computed from medians over repeats/seeds.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
NUM_ENVS = (1, 8)
SAMPLING_FRAMEWORKS = ("rllib", "loop", "flywheel")
TRAIN_FRAMEWORKS = ("rllib", "sb3", "loop", "flywheel")
NAMES = {
    "rllib": "RLlib 2.60",
    "sb3": "Stable-Baselines3",
    "loop": "single-file loop",
    "flywheel": "flywheel",
}


def load(name: str) -> list[dict[str, Any]]:
    path = RESULTS / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def ratio_cell(ratio: float | None, target: float | None = None, strict: bool = False) -> str:
    """`2.50×`, with `(met)` / `(NOT met)` when there is a target; `not measured` without numbers."""
    if ratio is None:
        return "not measured"
    if target is None:
        return f"{ratio:,.2f}×"
    met = ratio > target if strict else ratio >= target
    return f"{ratio:,.2f}× ({'met' if met else 'NOT met'})"


def errors_of(rows: list[dict[str, Any]], label: str) -> list[str]:
    return [f"- {label}: `{row['error']}`" for row in rows if "error" in row]


def sampling_section() -> list[str]:
    lines = [
        "## Sampling: env steps/s, CartPole-v1, `sample(num_timesteps=4000)`, explore, default 2x256 module",
        "",
        "Median over repeats (min–max in brackets). Higher is better.",
        "",
        "| framework | " + " | ".join(f"{n} env{'s' if n > 1 else ''}" for n in NUM_ENVS) + " |",
        "|---|" + "---:|" * len(NUM_ENVS),
    ]
    medians: dict[tuple[str, int], float | None] = {}
    errors: list[str] = []
    for fw in SAMPLING_FRAMEWORKS:
        cells = []
        for n in NUM_ENVS:
            rows = load(f"sampling_{fw}_{n}envs.jsonl")
            errors += errors_of(rows, f"{NAMES[fw]}, {n} envs")
            values = [r["env_steps_per_s"] for r in rows if "env_steps_per_s" in r]
            medians[fw, n] = median(values)
            spread = f" ({fmt(min(values))}–{fmt(max(values))}, n={len(values)})" if values else ""
            cells.append(fmt(medians[fw, n]) + spread)
        lines.append(f"| {NAMES[fw]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| ratio | target | " + " | ".join(f"{n} env{'s' if n > 1 else ''}" for n in NUM_ENVS) + " |",
    ]
    lines.append("|---|---|" + "---:|" * len(NUM_ENVS))
    for peer, target in (("rllib", 10.0), ("loop", 0.5)):
        cells = []
        for n in NUM_ENVS:
            ours, theirs = medians["flywheel", n], medians[peer, n]
            ratio = ours / theirs if ours and theirs else None
            cells.append(ratio_cell(ratio, target))
        lines.append(f"| flywheel / {NAMES[peer]} | ≥ {target:g}× | " + " | ".join(cells) + " |")
    return lines + ([""] + errors if errors else [])


def sampling_ma_section() -> list[str]:
    lines = [
        "## Multi-agent sampling: env steps/s, two CartPole-v1 agents, 2 modules, `sample(num_timesteps=4000)`",
        "",
        "MultiAgentEnvRunner of each framework (see bench/README.md). Median over repeats (min–max in",
        "brackets). Higher is better.",
        "",
        "| framework | " + " | ".join(f"{n} env{'s' if n > 1 else ''}" for n in NUM_ENVS) + " |",
        "|---|" + "---:|" * len(NUM_ENVS),
    ]
    medians: dict[tuple[str, int], float | None] = {}
    errors: list[str] = []
    for fw in ("rllib", "flywheel"):
        cells = []
        for n in NUM_ENVS:
            rows = load(f"sampling_ma_{fw}_{n}envs.jsonl")
            errors += errors_of(rows, f"{NAMES[fw]}, {n} envs")
            values = [r["env_steps_per_s"] for r in rows if "env_steps_per_s" in r]
            medians[fw, n] = median(values)
            spread = f" ({fmt(min(values))}–{fmt(max(values))}, n={len(values)})" if values else ""
            cells.append(fmt(medians[fw, n]) + spread)
        lines.append(f"| {NAMES[fw]} | " + " | ".join(cells) + " |")
    cells = []
    for n in NUM_ENVS:
        ours, theirs = medians["flywheel", n], medians["rllib", n]
        cells.append(ratio_cell(ours / theirs if ours and theirs else None, 10.0))
    lines += [
        "",
        "| ratio | target | " + " | ".join(f"{n} env{'s' if n > 1 else ''}" for n in NUM_ENVS) + " |",
        "|---|---|" + "---:|" * len(NUM_ENVS),
        f"| flywheel / {NAMES['rllib']} | ≥ 10× | " + " | ".join(cells) + " |",
    ]
    return lines + ([""] + errors if errors else [])


def train_remote_section() -> list[str]:
    runners = (0, 1, 2)
    lines = [
        "## Remote training: PPO CartPole-v1 `train()` env steps/s with 0, 1, 2 remote env runners",
        "",
        "RLlib's CartPole example settings for both (train batch 4000, 6 epochs, linear 32-unit net),",
        "one warm-up `train()` then 5 timed ones; 0 runners samples in the driver. Median over lines",
        "(scaling against the same framework's 0-runner figure in brackets). Higher is better.",
        "",
        "| framework | " + " | ".join(f"{k} runners" for k in runners) + " | load avg (1 min) |",
        "|---|" + "---:|" * (len(runners) + 1),
    ]
    medians: dict[tuple[str, int], float | None] = {}
    errors: list[str] = []
    for fw in ("rllib", "flywheel"):
        rows = load(f"train_remote_{fw}.jsonl")
        errors += errors_of(rows, NAMES[fw])
        for k in runners:
            medians[fw, k] = median(
                [r["steps_per_s"] for r in rows if r.get("num_env_runners") == k and "steps_per_s" in r]
            )
        base = medians[fw, 0]
        cells = [
            fmt(medians[fw, k]) + (f" ({medians[fw, k] / base:.2f}×)" if base and medians[fw, k] else "")
            for k in runners
        ]
        loads = ", ".join(f"{r['loadavg_1m']:g}" for r in rows if "loadavg_1m" in r)
        lines.append(f"| {NAMES[fw]} | " + " | ".join(cells) + f" | {loads or '—'} |")
    cells = []
    for k in runners:
        ours, theirs = medians["flywheel", k], medians["rllib", k]
        cells.append(ratio_cell(ours / theirs if ours and theirs else None, 5.0 if k == 2 else None))
    lines += [
        "",
        "| ratio | target | " + " | ".join(f"{k} runners" for k in runners) + " |",
        "|---|---|" + "---:|" * len(runners),
        f"| flywheel / {NAMES['rllib']} | ≥ 5× at 2 runners | " + " | ".join(cells) + " |",
    ]
    return lines + ([""] + errors if errors else [])


def offpolicy_section() -> list[str]:
    lines = [
        "## Off-policy learning: DQN CartPole-v1 to 450, SAC Pendulum-v1 to -250 (flywheel only)",
        "",
        "`bench/learning_offpolicy.py` with the settings of examples/dqn_cartpole.py and",
        "examples/sac_pendulum.py; the threshold is checked after each `train()` on the mean return of",
        "the last 100 (DQN) / 10 (SAC) episodes. **No RLlib or SB3 peer scripts exist yet, so there",
        "are no peer rows and no ratios.** Medians over seeds that reached the threshold.",
        "",
        "| algorithm | reached | s to threshold | CPU s | env steps to threshold | last mean return "
        "| training steps/s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    rows = [r for r in load("learning_offpolicy_flywheel.jsonl") if "error" not in r]
    errors = errors_of(load("learning_offpolicy_flywheel.jsonl"), "flywheel")
    for algo in ("dqn", "sac"):
        runs = [r[algo] for r in rows if algo in r]
        errors += [f"- flywheel {algo}: `{run['error']}`" for run in runs if "error" in run]
        ok = [run for run in runs if "error" not in run]
        hit = [run for run in ok if run["env_steps_to_threshold"] is not None]
        name = f"{algo.upper()} {ok[0]['env']} → {ok[0]['threshold']:g}" if ok else algo.upper()
        lines.append(
            f"| {name} | {len(hit)}/{len(runs)} | {fmt(median([h['seconds_to_threshold'] for h in hit]), 1)} "
            f"| {fmt(median([h['cpu_seconds_to_threshold'] for h in hit]), 1)} "
            f"| {fmt(median([h['env_steps_to_threshold'] for h in hit]))} "
            f"| {fmt(median([run['last_mean_return'] for run in ok]), 1)} "
            f"| {fmt(median([run['training_steps_per_s'] for run in ok]), 1)} |"
        )
    return lines + ([""] + errors if errors else [])


def train_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the seeds that reached each threshold."""
    ok = [r for r in rows if "error" not in r]

    def med(key: str, threshold: int | None = None) -> float | None:
        if threshold is None:
            return median([r[key] for r in ok if r.get(key) is not None])
        return median([r[f"to_{threshold}"][key] for r in ok if r.get(f"to_{threshold}")])

    return {
        "seeds": len(rows),
        "reached_450": sum(1 for r in ok if r.get("to_450")),
        "reached_475": sum(1 for r in ok if r.get("to_475")),
        "s450": med("seconds", 450),
        "train_s450": med("train_seconds", 450),
        "steps450": med("env_steps", 450),
        "s475": med("seconds", 475),
        "steps_per_s": med("steps_per_s"),
        "startup_s": med("startup_s"),
        "rss": med("peak_rss_mb"),
        "tree_rss": med("peak_tree_rss_mb"),
    }


def train_section() -> list[str]:
    lines = [
        "## Training: PPO on CartPole-v1 to a last-100-episodes mean return of 450 (and 475)",
        "",
        "Medians over seeds that reached the threshold. Seconds count from process start (imports,",
        "setup and startup included); `train s` from the start of the training loop.",
        "",
        "| framework | reached 450 | s to 450 | train s to 450 | env steps to 450 | s to 475 (reached) "
        "| env steps/s | startup s | peak RSS MiB (process / tree) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    summaries, errors = {}, []
    for fw in TRAIN_FRAMEWORKS:
        rows = load(f"train_{fw}.jsonl")
        errors += errors_of(rows, NAMES[fw])
        s = summaries[fw] = train_summary(rows)
        lines.append(
            f"| {NAMES[fw]} | {s['reached_450']}/{s['seeds']} | {fmt(s['s450'], 1)} | {fmt(s['train_s450'], 1)} "
            f"| {fmt(s['steps450'])} | {fmt(s['s475'], 1)} ({s['reached_475']}/{s['seeds']}) "
            f"| {fmt(s['steps_per_s'])} | {fmt(s['startup_s'], 1)} | {fmt(s['rss'])} / {fmt(s['tree_rss'])} |"
        )
    lines += [
        "",
        "Speed-up = peer's seconds to 450 ÷ flywheel's (above 1: flywheel is faster).",
        "",
        "| speed-up | target | wall-clock to 450 | env steps to 450 (peer ÷ flywheel) |",
        "|---|---|---:|---:|",
    ]
    ours = summaries["flywheel"]
    for peer, target, strict in (("rllib", 3.0, False), ("sb3", 1.0, True), ("loop", None, False)):
        theirs = summaries[peer]
        ratio = theirs["s450"] / ours["s450"] if ours["s450"] and theirs["s450"] else None
        steps = theirs["steps450"] / ours["steps450"] if ours["steps450"] and theirs["steps450"] else None
        goal = "—" if target is None else (f"> {target:g}×" if strict else f"≥ {target:g}×")
        lines.append(
            f"| {NAMES[peer]} ÷ flywheel | {goal} | {ratio_cell(ratio, target, strict)} | {ratio_cell(steps)} |"
        )
    return lines + ([""] + errors if errors else [])


def machine_section() -> list[str]:
    path = RESULTS / "machine.json"
    facts = json.loads(path.read_text()) if path.exists() else {}
    keys = ("date", "nproc", "cpu", "memory_gib", "python", "torch", "ray", "stable_baselines3", "gymnasium",
            "numpy", "flywheel_commit", "loadavg_1m_at_start", "nice", "autogroup", "openblas_env")  # fmt: skip
    lines = [
        "## Machine",
        "",
        "Facts of the latest `run.sh` invocation.",
        "",
        "| fact | value |",
        "|---|---|",
    ]
    lines += [f"| {k} | {facts.get(k, '—')} |" for k in keys]
    return lines


def main() -> None:
    lines = [
        "# flywheel benchmark results",
        "",
        "Generated by `bench/report.py` from `bench/results/*.jsonl` (see bench/README.md for what is",
        "measured and how). Peers and flywheel should come from the same run on the same machine;",
        "each raw line also carries the 1-minute load average at its end (`loadavg_1m`): a figure",
        "taken above ~2 on this 2-core machine had competition for the CPU.",
        "",
        *machine_section(),
        "",
        *sampling_section(),
        "",
        *train_section(),
        "",
        *sampling_ma_section(),
        "",
        *train_remote_section(),
        "",
        *offpolicy_section(),
        "",
    ]
    (HERE / "RESULTS.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
