"""Writes bench/RESULTS.md from the raw JSON lines in bench/results/.

Run by run.sh after the benchmarks; run it alone to regenerate the report from saved results
(e.g. after re-measuring only flywheel). Ratios are computed from medians over repeats/seeds.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from mujoco_report import mujoco_section

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
NUM_ENVS = (1, 8)  # multi-agent sampling
SAMPLING_NUM_ENVS = (1, 8, 64)
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


def side_by_side(bench: str, key: str, unit: str, target: float) -> list[str]:
    """Table of RLlib's and flywheel's `key` in results/<bench>_<fw>.jsonl (median, each repeat), the
    median of the per-repeat ratios against `target`, and any error lines."""
    lines = [f"| framework | median {unit} | per repeat |", "|---|---:|---|"]
    rows = {fw: load(f"{bench}_{fw}.jsonl") for fw in ("rllib", "flywheel")}
    errors = [e for fw, r in rows.items() for e in errors_of(r, NAMES[fw])]
    ok = {fw: [r for r in rs if key in r] for fw, rs in rows.items()}
    for fw, rs in ok.items():
        per = ", ".join(fmt(r[key]) for r in rs)
        lines.append(f"| {NAMES[fw]} | {fmt(median([r[key] for r in rs]))} | {per or '—'} |")
    ratios = [f[key] / r[key] for r, f in zip(ok["rllib"], ok["flywheel"], strict=False)]
    lines += [
        "",
        f"flywheel / RLlib: {ratio_cell(median(ratios), target)} (median of per-repeat ratios "
        f"{', '.join(f'{x:.2f}' for x in ratios) or '—'}; target ≥ {target:g}×)",
    ]
    return lines + ([""] + errors if errors else [])


def sampling_section() -> list[str]:
    lines = [
        "## Sampling: env steps/s, CartPole-v1, `sample(num_timesteps=4000)`, explore, default 2x256 module",
        "",
        "Median over repeats (min–max in brackets). Higher is better. The loop and flywheel run side by",
        "side in timed turns (bench/turns.py), RLlib alone.",
        "",
        "| framework | " + " | ".join(f"{n} env{'s' if n > 1 else ''}" for n in SAMPLING_NUM_ENVS) + " |",
        "|---|" + "---:|" * len(SAMPLING_NUM_ENVS),
    ]
    medians: dict[tuple[str, int], float | None] = {}
    errors: list[str] = []
    for fw in SAMPLING_FRAMEWORKS:
        cells = []
        for n in SAMPLING_NUM_ENVS:
            rows = load(f"sampling_{fw}_{n}envs.jsonl")
            errors += errors_of(rows, f"{NAMES[fw]}, {n} envs")
            values = [r["env_steps_per_s"] for r in rows if "env_steps_per_s" in r]
            medians[fw, n] = median(values)
            spread = f" ({fmt(min(values))}–{fmt(max(values))}, n={len(values)})" if values else ""
            cells.append(fmt(medians[fw, n]) + spread)
        lines.append(f"| {NAMES[fw]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| ratio | target | "
        + " | ".join(f"{n} env{'s' if n > 1 else ''}" for n in SAMPLING_NUM_ENVS)
        + " |",
    ]
    lines.append("|---|---|" + "---:|" * len(SAMPLING_NUM_ENVS))
    for peer, target in (("rllib", 10.0), ("loop", 0.95)):
        cells = []
        for n in SAMPLING_NUM_ENVS:
            ours, theirs = medians["flywheel", n], medians[peer, n]
            ratio = ours / theirs if ours and theirs else None
            cells.append(ratio_cell(ratio, target))
        lines.append(f"| flywheel / {NAMES[peer]} | ≥ {target:g}× | " + " | ".join(cells) + " |")
    return lines + ([""] + errors if errors else [])


def train_speed_section() -> list[str]:
    lines = [
        "## PPO `train()` env steps/s at the single-file loop's settings",
        "",
        "4 envs x 128 steps, 4 epochs x 4 minibatches of 128, separate 64-64 tanh networks, one torch thread;",
        "whole iterations (sampling and update) timed in turns, loop and flywheel side by side. Median over",
        "repeats (min–max in brackets). Higher is better.",
        "",
        "| framework | env steps/s |",
        "|---|---:|",
    ]
    medians: dict[str, float | None] = {}
    errors: list[str] = []
    for fw in ("loop", "flywheel"):
        rows = load(f"train_speed_{fw}.jsonl")
        errors += errors_of(rows, NAMES[fw])
        values = [r["env_steps_per_s"] for r in rows if "env_steps_per_s" in r]
        medians[fw] = median(values)
        spread = f" ({fmt(min(values))}–{fmt(max(values))}, n={len(values)})" if values else ""
        lines.append(f"| {NAMES[fw]} | {fmt(medians[fw])}{spread} |")
    ours, theirs = medians["flywheel"], medians["loop"]
    lines += [
        "",
        "| ratio | target | value |",
        "|---|---|---:|",
        f"| flywheel / {NAMES['loop']} | ≥ 0.9× | {ratio_cell(ours / theirs if ours and theirs else None, 0.9)} |",
    ]
    return lines + ([""] + errors if errors else [])


def sampling_ma_section() -> list[str]:
    lines = [
        "## Multi-agent sampling: env steps/s, two CartPole-v1 agents, 2 modules, `sample(num_timesteps=4000)`",
        "",
        "MultiAgentEnvRunner of each framework (see bench/README.md), both started side by side and timed",
        "in alternating turns (bench/turns.py), so that the machine's swings in speed weigh alike on both.",
        "Median over repeats (min–max in brackets). Higher is better.",
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
        "one warm-up `train()`, then timed ones for at least 10 s (and 5 calls); 0 runners samples in the",
        "driver. Median over repeats (scaling against the same framework's 0-runner figure in brackets).",
        "Higher is better.",
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


OFFPOLICY_FRAMEWORKS = ("rllib", "sb3", "flywheel")
OFFPOLICY_TARGETS = (("rllib", 3.0), ("sb3", 1.0))  # peer seconds ÷ flywheel seconds


def offpolicy_runs(fw: str, algo: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The error-free per-algorithm results of `fw`'s off-policy lines, and the errors as report lines."""
    rows = load(f"learning_offpolicy_{fw}.jsonl")
    runs = [{"torch_threads": r.get("torch_threads"), **r[algo]} for r in rows if algo in r]
    errors = errors_of(rows, NAMES[fw])
    errors += [f"- {NAMES[fw]} {algo.upper()}: `{run['error']}`" for run in runs if "error" in run]
    return [run for run in runs if "error" not in run], errors


def run_seconds(run: dict[str, Any]) -> float | None:
    """Seconds the run trained: flywheel's line has them only as `seconds_to_threshold` (it stops there)."""
    return run.get("seconds", run["seconds_to_threshold"])


def run_steps_per_s(run: dict[str, Any]) -> float | None:
    """Env steps/s over the run (flywheel's line: up to the threshold, where it stops)."""
    if run.get("env_steps_per_s") is not None:
        return run["env_steps_per_s"]
    seconds = run["seconds_to_threshold"]
    return run["env_steps_to_threshold"] / seconds if seconds else None


def offpolicy_row(fw: str, algo: str, runs: list[dict[str, Any]]) -> str:
    hit = [run for run in runs if run["env_steps_to_threshold"] is not None]

    def med(key: str, among: list[dict[str, Any]], digits: int = 0) -> str:
        return fmt(median([run[key] for run in among if run.get(key) is not None]), digits)

    def med_of(values: list[float | None], digits: int = 0) -> str:
        return fmt(median([v for v in values if v is not None]), digits)

    return (
        f"| {NAMES[fw]} | {algo.upper()} | {len(hit)}/{len(runs)} | {med('seconds_to_threshold', hit, 1)} "
        f"| {med('cpu_seconds_to_threshold', hit, 1)} | {med('env_steps_to_threshold', hit)} "
        f"| {med('best_mean_return', runs, 1)} ({med('env_steps_at_best', runs)}) "
        f"| {med('last_mean_return', runs, 1)} | {med_of([run_steps_per_s(run) for run in runs])} "
        f"| {med_of([run_seconds(run) for run in runs], 1)} | {med('torch_threads', runs)} |"
    )


def offpolicy_ratio(peer: list[dict[str, Any]], ours: list[dict[str, Any]], target: float) -> str:
    """Peer seconds to threshold ÷ flywheel's (medians). A peer run that did not reach the threshold
    counts at the seconds it trained, which makes the ratio a lower bound, met only if the bound is."""
    ours_s = median([run["seconds_to_threshold"] for run in ours if run["seconds_to_threshold"] is not None])
    if not peer or not ours:
        return "not measured"
    if ours_s is None:
        return "— (flywheel did not reach the threshold)"
    missed = [run for run in peer if run["seconds_to_threshold"] is None]
    if not missed:
        return ratio_cell(median([run["seconds_to_threshold"] for run in peer]) / ours_s, target)
    bound = median([run["seconds_to_threshold"] or run_seconds(run) for run in peer]) / ours_s
    met = "met" if bound >= target else "NOT met"
    if len(missed) == len(peer):
        best = max(
            (run["best_mean_return"] for run in peer if run.get("best_mean_return") is not None), default=None
        )
        seconds = fmt(median([run_seconds(run) for run in peer]))
        return f"≥ {bound:,.2f}× (peer not reached in {seconds} s, best mean {fmt(best, 1)}) ({met})"
    reached = f"{len(peer) - len(missed)}/{len(peer)} seeds reached"
    return f"≥ {bound:,.2f}× ({reached}; the others count at the seconds they trained) ({met})"


def offpolicy_section() -> list[str]:
    lines = [
        "## Off-policy learning: DQN CartPole-v1 to 450 (last 100 episodes), SAC Pendulum-v1 to -250 (last 10)",
        "",
        "flywheel: `learning_offpolicy.py` (examples/dqn_cartpole.py, examples/sac_pendulum.py; budgets",
        "of 100k / 20k env steps); SB3: rl-zoo's settings; RLlib: its tuned examples, everything local",
        "(see bench/README.md). Seconds and CPU seconds count from the start of the training loop.",
        "Medians over the seeds that reached the threshold; best and last mean, env steps/s and",
        "seconds trained are medians over all seeds (env steps at the best mean in brackets).",
        "flywheel runs its local runner and learner on one torch thread; the peers use what their",
        "line says (torch's default is one per core; see bench/README.md on why it matters here).",
        "",
        "| framework | algorithm | reached | s to threshold | CPU s | env steps to threshold "
        "| best mean (env steps) | last mean | env steps/s | s trained | torch threads |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    errors: list[str] = []
    for fw in OFFPOLICY_FRAMEWORKS:
        for algo in ("dqn", "sac"):
            runs[fw, algo], errs = offpolicy_runs(fw, algo)
            errors += [e for e in errs if e not in errors]
            lines.append(offpolicy_row(fw, algo, runs[fw, algo]))
    lines += [
        "",
        "Speed-up = peer's seconds to the threshold ÷ flywheel's (above 1: flywheel is faster). A peer",
        "that did not reach the threshold counts at the seconds it trained: the ratio is then a lower",
        "bound (≥), met only if the bound itself meets the target.",
        "",
        "| speed-up | target | DQN CartPole-v1 → 450 | SAC Pendulum-v1 → -250 |",
        "|---|---|---:|---:|",
    ]
    for peer, target in OFFPOLICY_TARGETS:
        cells = [offpolicy_ratio(runs[peer, algo], runs["flywheel", algo], target) for algo in ("dqn", "sac")]
        lines.append(f"| {NAMES[peer]} ÷ flywheel | ≥ {target:g}× | " + " | ".join(cells) + " |")
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


def atari_section() -> list[str]:
    lines = [
        "## Atari Pong PPO: env steps/s of `sample()` and of `train()`, RLlib 2.60 and flywheel in turns",
        "",
        "Same env (`AtariPreprocessing`: 4-frame skip, 84x84 grayscale), 4 frames stacked by connector",
        "pieces, RLlib's 84x84 CNN with shared value layers, 8 sub-envs, everything local; `train()` with a",
        "train batch of 512, minibatches of 128, 1 epoch. flywheel runs torch on 1 thread; RLlib on torch's",
        "default (one per core) or on 1 thread. Median over the runs in turns. Target: flywheel >= 3x RLlib.",
        "",
        "| measure | RLlib torch threads | RLlib 2.60 | flywheel | ratio | runs | load (1 min) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    errors: list[str] = []
    for mode, label in (("sample", "sampling"), ("train", "`train()`")):
        rllib, ours = load(f"atari_{mode}_rllib.jsonl"), load(f"atari_{mode}_flywheel.jsonl")
        errors += errors_of(rllib, f"RLlib {label}") + errors_of(ours, f"flywheel {label}")
        pairs: dict[int, list[tuple[dict, dict]]] = {}
        for peer, mine in zip(rllib, ours):  # the i-th lines of both files ran in turns together
            if "error" not in peer and "error" not in mine:
                pairs.setdefault(peer.get("torch_threads", 0), []).append((peer, mine))
        for threads, runs in sorted(pairs.items()):
            peer_rate = median([peer["env_steps_per_s"] for peer, _ in runs])
            our_rate = median([mine["env_steps_per_s"] for _, mine in runs])
            loads = [row["loadavg_1m"] for pair in runs for row in pair if "loadavg_1m" in row]
            lines.append(
                f"| {label} | {threads or 'default'} | {fmt(peer_rate, 1)} | {fmt(our_rate, 1)} "
                f"| {ratio_cell(our_rate / peer_rate, 3.0)} | {len(runs)} | {fmt(median(loads), 1)} |"
            )
    return lines + ([""] + errors if errors else [])


def minatar_section() -> list[str]:
    rows = load("learning_minatar_flywheel.jsonl")
    lines = [
        "## MinAtar Breakout: flywheel PPO (examples/ppo_minatar.py), 1M env steps",
        "",
        "Mean return of the last 100 episodes. Target: >= 10 within 1M env steps (random policy: 0.4).",
        "",
        "| seed | env steps to 10 | mean return at the end | best mean return | env steps/s | load (1 min) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row.get('seed', '?')} | error: `{row['error']}` | | | | |")
            continue
        reached = fmt(row["env_steps_to_threshold"]) if row["env_steps_to_threshold"] else "not reached"
        lines.append(
            f"| {row['seed']} | {reached} | {row['last_mean_return']:.2f} | {row['best_mean_return']:.2f} "
            f"| {fmt(row['env_steps_per_s'])} | {fmt(row.get('loadavg_1m'), 1)} |"
        )
    return lines


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
    from report_appo import appo_section  # imports this module's helpers
    from report_offline import offline_section
    from report_offpolicy_speed import offpolicy_speed_section
    from report_ppo_parity import ppo_parity_section
    from report_tuned import tuned_section

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
        *train_speed_section(),
        "",
        *train_section(),
        "",
        *sampling_ma_section(),
        "",
        *train_remote_section(),
        "",
        *offpolicy_section(),
        "",
        *atari_section(),
        "",
        *minatar_section(),
        "",
        *mujoco_section(),
        "",
        *appo_section(),
        "",
        *offline_section(),
        "",
        *offpolicy_speed_section(),
        "",
        *ppo_parity_section(),
        "",
        *tuned_section(),
    ]
    (HERE / "RESULTS.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
