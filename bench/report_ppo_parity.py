"""The PPO learning-parity part of bench/RESULTS.md (`report.py` includes it): env steps to a mean return
of 450 with RLlib's `cartpole_ppo` settings, RLlib 2.60 and flywheel (before and after issue 38's fixes)."""

from __future__ import annotations

from report import load

LABELS = {
    "rllib": "RLlib 2.60",
    "flywheel-before": "flywheel 13643e3 (before)",
    "flywheel": "flywheel 8f33530 (KL and init fixes)",
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
    lines += [
        "| framework | " + " | ".join(f"seed {s}: last 100 | seed {s}: own metric" for s in seeds) + " |",
        "|---|" + "---:|" * (2 * len(seeds)),
    ]
    by_key = {(row["label"], row["seed"]): row for row in rows}
    for label, name in LABELS.items():
        cells = []
        for seed in seeds:
            row = by_key.get((label, seed))
            cells += [_steps(row, "env_steps_to_target"), _steps(row, "env_steps_to_own_metric")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ratios = []
    for seed in seeds:
        mine, peer = by_key.get(("flywheel", seed)), by_key.get(("rllib", seed))
        if mine and peer and mine["env_steps_to_target"] and peer["env_steps_to_target"]:
            ratios.append(f"seed {seed}: {mine['env_steps_to_target'] / peer['env_steps_to_target']:.2f}")
    lines += [
        "",
        "flywheel / RLlib env steps to a last-100 mean of 450: " + (", ".join(ratios) or "n/a") + ".",
    ]
    return lines


def _steps(row: dict | None, key: str) -> str:
    if row is None:
        return "–"
    return "not reached" if row[key] is None else f"{row[key]:,}"
