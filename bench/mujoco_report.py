"""The MuJoCo part of RESULTS.md, and its learning-curve plots (matplotlib).

`report.py` calls `mujoco_section()`; run alone (`bench/.venv/bin/python bench/mujoco_report.py`) it
redraws the plots and prints the section. Inputs: the summaries in results/mujoco_<framework>.jsonl
(one line per finished run) and the curves in results/mujoco/<framework>_<env>_seed<seed>.jsonl
(one point per update: env steps, mean raw return of the last 10 episodes), which are there from the
first update on, so an unfinished run shows as a partial curve.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
ENVS = ("HalfCheetah-v5", "Hopper-v5")
FRAMEWORKS = {"sb3": "Stable-Baselines3", "flywheel": "flywheel", "flywheel_tuned": "flywheel, tuned"}
ZOO_TUNED_HALFCHEETAH = 5819  # rl-zoo's PPO HalfCheetah (deterministic evaluation, 1M steps)
STEPS_PER_S_TARGET = 1.3


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summaries(framework: str, env: str) -> list[dict[str, Any]]:
    """Finished runs, the latest per seed."""
    by_seed = {row["seed"]: row for row in _lines(RESULTS / f"mujoco_{framework}.jsonl") if row["env"] == env}
    return [by_seed[seed] for seed in sorted(by_seed)]


def curves(framework: str, env: str) -> dict[int, list[tuple[int, float, float | None]]]:
    """Per seed: (env steps, mean return of the last 10 episodes, CPU seconds so far or None)."""
    out = {}
    for path in sorted((RESULTS / "mujoco").glob(f"{framework}_{env}_seed*.jsonl")):
        points = [(row["t"], row["r"], row.get("cpu_s")) for row in _lines(path)]
        if points:
            out[int(path.stem.rsplit("seed", 1)[1])] = points
    return out


def _mean_std(values: list[float]) -> str:
    if not values:
        return "–"
    spread = f" ± {statistics.stdev(values):,.0f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):,.0f}{spread}"


def _row(framework: str, env: str) -> tuple[str, list[dict[str, Any]]]:
    done = summaries(framework, env)
    partial = {seed: points[-1] for seed, points in curves(framework, env).items()}
    for row in done:
        partial.pop(row["seed"], None)
    finals = [row["final_return"] for row in done]
    cells = [
        FRAMEWORKS[framework],
        f"{len(done)} ({', '.join(str(r['seed']) for r in done) or '–'})",
        _mean_std(finals),
        ", ".join(f"{v:,.0f}" for v in finals) or "–",
        _mean_std([row["eval_return"] for row in done]),
        _mean_std([row["env_steps_per_s"] for row in done]),
        _mean_std([row["env_steps_per_cpu_s"] for row in done if "env_steps_per_cpu_s" in row]),
        "; ".join(_partial(seed, point) for seed, point in sorted(partial.items())) or "–",
    ]
    return "| " + " | ".join(cells) + " |", done


def _partial(seed: int, point: tuple[int, float, float | None]) -> str:
    steps, ret, cpu = point
    rate = f", {steps / cpu:,.0f} steps per CPU-s" if cpu else ""
    return f"seed {seed}: {ret:,.0f} at {steps:,} steps{rate}"


def _steps_per_s_ratio(ours: list[dict[str, Any]], peer: list[dict[str, Any]]) -> str:
    """flywheel ÷ SB3 env steps/s over the seeds both finished (each pair ran side by side)."""
    peer_by_seed = {row["seed"]: row for row in peer}
    pairs = [(row, peer_by_seed[row["seed"]]) for row in ours if row["seed"] in peer_by_seed]
    parts = []
    for key, what in (("env_steps_per_s", "wall-clock"), ("env_steps_per_cpu_s", "per CPU-second")):
        ratios = [a[key] / b[key] for a, b in pairs if key in a and key in b]
        if ratios:
            median = statistics.median(ratios)
            verdict = "met" if median >= STEPS_PER_S_TARGET else "NOT met"
            parts.append(f"{median:.2f}× {what} (n={len(ratios)}; target ≥ {STEPS_PER_S_TARGET}×: {verdict})")
    return "; ".join(parts) or "–"


def mujoco_section() -> list[str]:
    lines = [
        "## PPO on MuJoCo: CleanRL's `ppo_continuous_action` recipe, 1M env steps",
        "",
        "Both frameworks run the same recipe (`bench/mujoco_recipe.py`; flywheel's is `examples/ppo_mujoco.py`,",
        "a config), one process per framework at a time, side by side, each pinned to one core, niced.",
        "Returns are the env's raw returns: the final one is the mean of the last 10 training episodes, the",
        "evaluation one of 10 deterministic episodes after training. Curves: `results/mujoco_<env>.png`.",
        "",
    ]
    for env in ENVS:
        rows, done = [], {}
        for framework in FRAMEWORKS:
            row, done[framework] = _row(framework, env)
            if done[framework] or curves(framework, env):
                rows.append(row)
        lines += [f"### {env}", ""]
        if not rows:
            lines += ["No runs yet.", ""]
            continue
        lines += [
            "| framework | seeds done | final return | per seed | deterministic eval | env steps/s | per CPU-s | unfinished runs |",
            "|---|---|---:|---|---:|---:|---:|---|",
            *rows,
        ]
        ours, peer = done["flywheel"], done["sb3"]
        lines += ["", f"- env steps/s, flywheel ÷ SB3: {_steps_per_s_ratio(ours, peer)}"]
        if ours and peer:
            a, b = (
                statistics.mean(r["final_return"] for r in ours),
                statistics.mean(r["final_return"] for r in peer),
            )
            lines.append(
                f"- final return, flywheel mean {a:,.0f} vs SB3 mean {b:,.0f}: {'≥' if a >= b else '<'} SB3"
            )
        if env == "HalfCheetah-v5" and done["flywheel_tuned"]:
            tuned = statistics.mean(r["eval_return"] for r in done["flywheel_tuned"])
            lines.append(
                f"- tuned recipe (`--tuned`): deterministic eval {tuned:,.0f} = "
                f"{tuned / ZOO_TUNED_HALFCHEETAH:.0%} of rl-zoo's ~{ZOO_TUNED_HALFCHEETAH:,}"
            )
        lines.append("")
    notes = RESULTS / "mujoco_notes.md"  # what the numbers alone do not say (e.g. how a run was cut short)
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    return lines


def plot() -> list[Path]:
    """One PNG per env: each framework's seeds as thin lines, their mean as a thick one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for env in ENVS:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        drawn = False
        for (framework, label), color in zip(
            FRAMEWORKS.items(), ("tab:orange", "tab:blue", "tab:green"), strict=True
        ):
            runs = curves(framework, env)
            for points in runs.values():
                ax.plot(
                    [p[0] for p in points], [p[1] for p in points], color=color, alpha=0.35, linewidth=0.8
                )
            if runs:
                grid = sorted({p[0] for points in runs.values() for p in points})
                mean = [
                    statistics.mean(_at(points, t) for points in runs.values() if points[-1][0] >= t)
                    for t in grid
                ]
                ax.plot(
                    grid,
                    mean,
                    color=color,
                    linewidth=2,
                    label=f"{label} ({len(runs)} seed{'s' if len(runs) > 1 else ''})",
                )
                drawn = True
        if not drawn:
            plt.close(fig)
            continue
        ax.set(
            title=f"PPO {env}, CleanRL recipe",
            xlabel="env steps",
            ylabel="mean raw return (last 10 episodes)",
        )
        ax.grid(alpha=0.3)
        ax.legend()
        path = RESULTS / f"mujoco_{env}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def _at(points: list[tuple[int, float, float | None]], t: int) -> float:
    """The curve's value at step t (its last point at or before t)."""
    value = points[0][1]
    for step, ret, _ in points:
        if step > t:
            break
        value = ret
    return value


if __name__ == "__main__":
    print("\n".join(mujoco_section()))
    for path in plot():
        print("wrote", path)
