"""The PPO learning-parity part of bench/RESULTS.md (`report.py` includes it): env steps to a mean return
of 450 with RLlib's `cartpole_ppo` settings, RLlib 2.60 and flywheel (before and after issue 38's fixes)."""

from __future__ import annotations

from report import load, median

LABELS = {
    "rllib": "RLlib 2.60",
    "flywheel-before": "flywheel 13643e3 (before)",
    "flywheel": "flywheel 8f33530+ (KL and init fixes)",
}


def ppo_parity_section() -> list[str]:
    rows = load("ppo_parity.jsonl")
    lines = [
        "## PPO learning parity: RLlib's `cartpole_ppo` settings, env steps to a mean return of 450",
        "",
        "`bench/ppo_parity.py`: CartPole-v1, lr 3e-4, 6 epochs, vf_loss_coeff 0.01, one shared linear layer of 32",
        "units; PPO's defaults otherwise (train batch 4000, minibatch 128, clip 0.3, KL loss 0.2 / target 0.01,",
        "lambda 1.0, gamma 0.99, vf_clip_param 10, no entropy bonus, no gradient clipping). Both sides",
        "`num_env_runners=0`, 16 envs, 1 torch thread (RLlib's example runs 4 runners x 16 envs). "
        "**last 100**: env",
        "steps when the mean of the last 100 finished episodes, counted the same way for both from",
        "`on_sample_end`, first reaches 450. **own metric**: when the framework's `episode_return_mean` does;",
        "RLlib 2.60's covers one iteration's episodes only (docs/porting.md), so it reads 450 much earlier.",
        "Fewer is better; one run per seed on a loaded machine.",
        "",
    ]
    if not rows:
        return [*lines, "Not measured."]
    seeds = sorted({row["seed"] for row in rows})
    by_key = {(row["label"], row["seed"]): row for row in rows}
    for key, title in (("env_steps_to_target", "last 100"), ("env_steps_to_own_metric", "own metric")):
        lines += [
            f"**{title}**:",
            "",
            "| framework | " + " | ".join(f"seed {s}" for s in seeds) + " | median |",
            "|---|" + "---:|" * (len(seeds) + 1),
        ]
        for label, name in LABELS.items():
            found = [by_key.get((label, seed)) for seed in seeds]
            reached = [row[key] for row in found if row is not None and row[key] is not None]
            cells = [_steps(row, key) for row in found] + [f"{median(reached):,.0f}" if reached else "–"]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    medians = {}
    for label in ("flywheel", "rllib"):
        reached = [
            row["env_steps_to_target"] for row in rows if row["label"] == label and row["env_steps_to_target"]
        ]
        medians[label] = median(reached)
    ratio = f"{medians['flywheel'] / medians['rllib']:.2f}" if all(medians.values()) else "n/a"
    lines.append(f"flywheel / RLlib, medians of env steps to a last-100 mean of 450: {ratio}.")
    return lines


def _steps(row: dict | None, key: str) -> str:
    if row is None:
        return "–"
    return "not reached" if row[key] is None else f"{row[key]:,}"
