#!/usr/bin/env bash
# PPO on MuJoCo (CleanRL's ppo_continuous_action recipe), 1M env steps per run, one framework per call:
#
#   bench/mujoco.sh sb3 "HalfCheetah-v5 Hopper-v5" "0 1 2"        # SB3 from bench/.venv
#   bench/mujoco.sh flywheel "HalfCheetah-v5 Hopper-v5" "0 1 2"   # flywheel from the repo's .venv
#   bench/mujoco.sh flywheel HalfCheetah-v5 "0 1 2" --tuned       # the tuned flywheel recipe
#
# Runs are sequential, niced (BENCH_NICE, default 19) and pinned to one core (BENCH_CORE, default: sb3
# on core 1, flywheel on core 0), so the two frameworks run side by side, one core each, in two calls.
# Each run appends its summary to results/mujoco_<framework>.jsonl and its curve to results/mujoco/;
# `python bench/mujoco_report.py` then plots the curves and writes the MuJoCo part of RESULTS.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
framework="$1"; envs="$2"; seeds="$3"; shift 3
case "$framework" in
    sb3) py="${BENCH_SB3_PYTHON:-$here/.venv/bin/python}"; core="${BENCH_CORE:-1}" ;;
    flywheel) py="${BENCH_FLYWHEEL_PYTHON:-$here/../.venv/bin/python}"; core="${BENCH_CORE:-0}" ;;
    *) echo "mujoco.sh: framework '$framework' is neither sb3 nor flywheel" >&2; exit 2 ;;
esac
mkdir -p "$here/results/logs"
for env in $envs; do
    for seed in $seeds; do
        log="$here/results/logs/mujoco_${framework}_${env}_seed${seed}.log"
        nice -n "${BENCH_NICE:-19}" taskset -c "$core" "$py" "$here/mujoco_$framework.py" --env "$env" --seed "$seed" "$@" 2>"$log"
    done
done
