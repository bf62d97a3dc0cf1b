#!/usr/bin/env bash
# Runs the benchmarks and writes bench/RESULTS.md.
#
#   bench/run.sh                          # everything: sampling (1, 8 and 64 envs, 3 repeats), training (seed 0)
#   bench/run.sh --seeds 3                # training with seeds 0, 1, 2
#   bench/run.sh --frameworks "flywheel"  # re-measure flywheel only; the peers' saved results stay
#   bench/run.sh --only sampling          # or: --only trainspeed (PPO train() at the loop's settings, loop and
#                                         #     flywheel), --only train, --only ma (multi-agent sampling),
#                                         #     --only remote (PPO train() with 0/1/2 remote runners),
#                                         #     --only offpolicy (DQN CartPole 450 / SAC Pendulum -250: rllib, sb3, flywheel)
#                                         #     --only atari (PPO Pong sampling and train() env steps/s: rllib, flywheel)
#                                         #     --only minatar (flywheel PPO MinAtar Breakout, 1M env steps per seed)
#                                         #     --only appo (APPO CartPole: train() steps/s side by side, scaling
#                                         #     with runners, wall-clock to 450; rllib, flywheel)
#                                         #     --only offline (BC rows/s from the same Parquet files: rllib, flywheel,
#                                         #     and the bare-torch floor, which runs with "loop")
#                                         #     --only offpolicy_speed (TQC env steps/s and IQL rows/s of
#                                         #     train() at RLlib's settings: rllib, flywheel)
#   bench/run.sh --report-only            # regenerate RESULTS.md from bench/results/
#
# Each script prints one JSON line; it is stored in bench/results/<bench>_<framework>[_<N>envs].jsonl
# (one line per repeat or seed, replaced for what this run measures), its stderr in bench/results/logs/.
set -euo pipefail
# Benchmarks run in a session of their own (see the priority note below); before parsing, so the
# arguments pass on whole.
if [[ -z "${BENCH_SESSION:-}" ]] && command -v setsid >/dev/null; then
    BENCH_SESSION=1 exec setsid --wait bash "$0" "$@"
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

frameworks="rllib loop sb3 flywheel"
only="all"
seeds=1
repeats=3
max_seconds=600
report_only=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --frameworks) frameworks="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --seeds) seeds="$2"; shift 2 ;;
        --repeats) repeats="$2"; shift 2 ;;
        --max-seconds) max_seconds="$2"; shift 2 ;;
        --report-only) report_only=1; shift ;;
        *) echo "run.sh: unknown option '$1' (expected --frameworks, --only, --seeds, --repeats, --max-seconds, --report-only)" >&2; exit 2 ;;
    esac
done
case "$only" in
    all | sampling | trainspeed | train | ma | remote | offpolicy | atari | minatar | appo | offline | offpolicy_speed) ;;
    *) echo "run.sh: --only '$only' is not a benchmark (expected sampling, trainspeed, train, ma, remote, offpolicy, atari, minatar, appo, offline or offpolicy_speed)" >&2; exit 2 ;;
esac

# BENCH_PYTHON: an interpreter of an existing bench venv (e.g. another checkout's, with PYTHONPATH
# pointing at this checkout's src/ for flywheel) instead of bench/.venv.
py="${BENCH_PYTHON:-.venv/bin/python}"
[[ -n "${BENCH_PYTHON:-}" || -x .venv/bin/python ]] || ./setup.sh
# Benchmarks run at a raised priority (BENCH_NICE, default -20) so that other work on this shared
# 2-core machine disturbs them less. Linux's autogroup scheduling weighs sessions against each other
# as wholes, so `nice` alone only ranks processes within our session: run.sh runs in a session of
# its own and raises that group's priority too. Without the permission, everything runs as usual.
echo "${BENCH_NICE:--20}" 2>/dev/null > /proc/self/autogroup || true
nice_cmd=(nice -n "${BENCH_NICE:--20}")
"${nice_cmd[@]}" true 2>/dev/null || nice_cmd=()
mkdir -p results/logs
# RLlib starts Ray; "local" makes it start a Ray of its own rather than join (or fail to reach) a cluster
# that something else on this machine started and recorded in /tmp/ray/ray_current_cluster.
export RAY_ADDRESS="${RAY_ADDRESS:-local}"

# measure OUT LOG LIMIT BENCH FRAMEWORK SCRIPT ARGS...: runs SCRIPT, appends its JSON result line to OUT,
# or an error line naming the log when the script printed none (crashed, killed, timed out).
measure() {
    local out="$1" log="$2" limit="$3" bench="$4" fw="$5"; shift 5
    echo "== $* (log: results/logs/$log)" >&2
    local line
    line="$("${nice_cmd[@]}" timeout "$limit" "$py" "$@" 2>"results/logs/$log" | grep '^{"bench"' | tail -n 1 || true)"
    if [[ -z "$line" ]]; then
        line="{\"bench\": \"$bench\", \"framework\": \"$fw\", \"error\": \"no result line (crashed or timed out after ${limit}s); see results/logs/$log\"}"
    fi
    echo "$line" | tee -a "$out" >&2
}

has() { [[ " $frameworks " == *" $1 "* ]]; }

# in_turns LEAD OTHER OUT LOG BENCH SCRIPT ARGS...: measures both frameworks (those selected), side by
# side in timed turns when both are (OUT, LOG and SCRIPT hold %s for the framework's name).
in_turns() {
    local lead="$1" other="$2" out="$3" log="$4" bench="$5" script="$6"; shift 6
    local turns_dir="" fw
    if has "$lead" && has "$other"; then turns_dir="$(mktemp -d)"; fi
    for fw in "$lead" "$other"; do
        has "$fw" || continue
        local args=("$@")
        if [[ -n "$turns_dir" ]]; then
            args+=(--turns-dir "$turns_dir" --turn-order "$lead,$other" --turn-as "$fw")
        fi
        # shellcheck disable=SC2059  # the names are formats with one %s
        measure "$(printf "$out" "$fw")" "$(printf "$log" "$fw")" 900 "$bench" "$fw" "$(printf "$script" "$fw")" "${args[@]}" &
    done
    wait
    if [[ -n "$turns_dir" ]]; then rm -rf "$turns_dir"; fi
}

if [[ $report_only == 0 ]]; then
    "${nice_cmd[@]}" "$py" machine.py > results/machine.json
    # Repeats and seeds are the outer loops, so every framework's figures are spread over the same
    # stretch of time and see the same competition for the CPU.
    if [[ $only == all || $only == sampling ]]; then
        for fw in rllib loop flywheel; do
            has "$fw" && for n in 1 8 64; do : > "results/sampling_${fw}_${n}envs.jsonl"; done
        done
        for r in $(seq 1 "$repeats"); do
            for n in 1 8 64; do
                has rllib && measure "results/sampling_rllib_${n}envs.jsonl" "sampling_rllib_${n}envs_r${r}.log" 900 \
                    sampling rllib sampling_rllib.py --num-envs "$n"
                # The loop and flywheel run side by side in timed turns (bench/turns.py) when both run.
                in_turns loop flywheel "results/sampling_%s_${n}envs.jsonl" "sampling_%s_${n}envs_r${r}.log" \
                    sampling "sampling_%s.py" --num-envs "$n"
            done
        done
    fi
    if [[ $only == all || $only == trainspeed ]]; then
        for fw in loop flywheel; do
            has "$fw" && : > "results/train_speed_${fw}.jsonl"
        done
        for r in $(seq 1 "$repeats"); do
            in_turns loop flywheel "results/train_speed_%s.jsonl" "train_speed_%s_r${r}.log" \
                train_speed "train_speed_%s.py"
        done
    fi
    if [[ $only == all || $only == train ]]; then
        for fw in rllib sb3 loop flywheel; do
            has "$fw" && : > "results/train_${fw}.jsonl"
        done
        for seed in $(seq 0 $((seeds - 1))); do
            for fw in rllib sb3 loop flywheel; do
                has "$fw" || continue
                measure "results/train_${fw}.jsonl" "train_${fw}_seed${seed}.log" $((${max_seconds%.*} + 300)) \
                    train "$fw" "train_${fw}.py" --seed "$seed" --max-seconds "$max_seconds"
            done
        done
    fi
    if [[ $only == all || $only == ma ]]; then
        for fw in rllib flywheel; do
            has "$fw" && for n in 1 8; do : > "results/sampling_ma_${fw}_${n}envs.jsonl"; done
        done
        # With both frameworks, they run side by side and take timed turns (bench/turns.py), so the
        # machine's swings in speed weigh alike on both.
        for r in $(seq 1 "$repeats"); do
            for n in 1 8; do
                turns_dir=""
                if has rllib && has flywheel; then turns_dir="$(mktemp -d)"; fi
                for fw in rllib flywheel; do
                    has "$fw" || continue
                    args=(--num-envs "$n")
                    if [[ -n "$turns_dir" ]]; then
                        args+=(--turns-dir "$turns_dir" --turn-order rllib,flywheel --turn-as "$fw")
                    fi
                    measure "results/sampling_ma_${fw}_${n}envs.jsonl" "sampling_ma_${fw}_${n}envs_r${r}.log" 900 \
                        sampling_ma "$fw" "sampling_${fw}_ma.py" "${args[@]}" &
                done
                wait
                if [[ -n "$turns_dir" ]]; then rm -rf "$turns_dir"; fi
            done
        done
    fi
    if [[ $only == all || $only == remote ]]; then
        for fw in rllib flywheel; do
            has "$fw" && : > "results/train_remote_${fw}.jsonl"
        done
        for r in $(seq 1 "$repeats"); do
            for runners in 0 1 2; do
                for fw in rllib flywheel; do
                    has "$fw" || continue
                    measure "results/train_remote_${fw}.jsonl" "train_remote_${fw}_${runners}runners_r${r}.log" 900 \
                        train_remote "$fw" "train_${fw}_remote.py" --num-env-runners "$runners"
                done
            done
        done
    fi
    if [[ $only == all || $only == offpolicy ]]; then
        for fw in rllib sb3 flywheel; do
            has "$fw" && : > "results/learning_offpolicy_${fw}.jsonl"
        done
        for seed in $(seq 0 $((seeds - 1))); do
            for fw in rllib sb3 flywheel; do
                has "$fw" || continue
                # flywheel's script stops at its env-step budgets (100k DQN, 20k SAC); the peers' at
                # --max-seconds of training per algorithm, with torch's default threads unless
                # BENCH_PEER_TORCH_THREADS is set (see README.md).
                if [[ $fw == flywheel ]]; then
                    script=learning_offpolicy.py args=(--seed "$seed")
                else
                    script="learning_offpolicy_${fw}.py" args=(--seed "$seed" --max-seconds "$max_seconds"
                        --torch-threads "${BENCH_PEER_TORCH_THREADS:-0}")
                fi
                measure "results/learning_offpolicy_${fw}.jsonl" "learning_offpolicy_${fw}_seed${seed}.log" \
                    $((${max_seconds%.*} * 2 + 300)) learning_offpolicy "$fw" "$script" "${args[@]}"
            done
        done
    fi
    if [[ $only == all || $only == atari ]]; then
        for mode in sample train; do
            for fw in rllib flywheel; do
                has "$fw" && : > "results/atari_${mode}_${fw}.jsonl"
            done
            for r in $(seq 1 "$repeats"); do
                turns_dir=""
                if has rllib && has flywheel; then turns_dir="$(mktemp -d)"; fi
                for fw in rllib flywheel; do
                    has "$fw" || continue
                    args=(--mode "$mode")
                    # RLlib with torch's default threads unless BENCH_PEER_TORCH_THREADS is set (README.md).
                    [[ $fw == rllib ]] && args+=(--torch-threads "${BENCH_PEER_TORCH_THREADS:-0}")
                    if [[ -n "$turns_dir" ]]; then
                        args+=(--turns-dir "$turns_dir" --turn-order rllib,flywheel --turn-as "$fw")
                    fi
                    measure "results/atari_${mode}_${fw}.jsonl" "atari_${mode}_${fw}_r${r}.log" 1800 \
                        "atari_$mode" "$fw" "atari_speed_${fw}.py" "${args[@]}" &
                done
                wait
                if [[ -n "$turns_dir" ]]; then rm -rf "$turns_dir"; fi
            done
        done
    fi
    if [[ $only == all || $only == minatar ]] && has flywheel; then
        : > results/learning_minatar_flywheel.jsonl
        for seed in $(seq 0 $((seeds - 1))); do
            measure results/learning_minatar_flywheel.jsonl "learning_minatar_seed${seed}.log" 7200 \
                learning_minatar flywheel learning_minatar.py --seed "$seed"
        done
    fi
    if [[ $only == all || $only == appo ]]; then
        for fw in rllib flywheel; do
            has "$fw" && : > "results/appo_throughput_${fw}.jsonl" && : > "results/appo_to450_${fw}.jsonl"
        done
        has flywheel && : > results/appo_scaling_flywheel.jsonl
        for r in $(seq 1 "$repeats"); do
            # train() env steps/s at 2 remote runners, side by side in timed turns (bench/turns.py).
            turns_dir=""
            if has rllib && has flywheel; then turns_dir="$(mktemp -d)"; fi
            for fw in rllib flywheel; do
                has "$fw" || continue
                args=(--framework "$fw" --mode throughput --num-env-runners 2)
                if [[ -n "$turns_dir" ]]; then
                    args+=(--turns-dir "$turns_dir" --turn-order rllib,flywheel --turn-as "$fw")
                fi
                measure "results/appo_throughput_${fw}.jsonl" "appo_throughput_${fw}_r${r}.log" 900 \
                    appo_throughput "$fw" train_appo.py "${args[@]}" &
            done
            wait
            if [[ -n "$turns_dir" ]]; then rm -rf "$turns_dir"; fi
            if has flywheel; then
                for runners in 0 1 2 4; do
                    measure results/appo_scaling_flywheel.jsonl "appo_scaling_${runners}runners_r${r}.log" 600 \
                        appo_throughput flywheel train_appo.py --framework flywheel --mode throughput \
                        --num-env-runners "$runners"
                done
            fi
            # Wall-clock to a last-100 mean of 450, interleaved: each framework with RLlib's tuned
            # settings and with flywheel's (the repeat number is the seed).
            for fw in rllib flywheel; do
                has "$fw" || continue
                for settings in rllib flywheel; do
                    measure "results/appo_to450_${fw}.jsonl" "appo_to450_${fw}_${settings}_r${r}.log" \
                        $((${max_seconds%.*} + 300)) appo_to450 "$fw" train_appo.py --framework "$fw" \
                        --mode to450 --settings "$settings" --seed $((r - 1)) --max-seconds "$max_seconds"
                done
            done
        done
    fi
    if [[ $only == all || $only == offline ]]; then
        # Offline BC rows/s from the same Parquet files (recorded once per run), in turns when both run.
        data="$(mktemp -d)"
        : > results/offline_bc_data.jsonl
        measure results/offline_bc_data.jsonl offline_bc_data.log 600 offline_bc_data flywheel \
            offline_bc.py --record "$data" --rows 100000
        # The bare-torch compute floor (torch_floor) takes the single-file loop's place: it runs with "loop".
        selected=()
        for fw in rllib flywheel torch_floor; do
            has "${fw/torch_floor/loop}" && selected+=("$fw") && : > "results/offline_bc_${fw}.jsonl"
        done
        order="$(IFS=,; echo "${selected[*]}")"
        for r in $(seq 1 "$repeats"); do
            turns_dir=""
            if [[ ${#selected[@]} -gt 1 ]]; then turns_dir="$(mktemp -d)"; fi
            for fw in "${selected[@]}"; do
                args=(--framework "$fw" --data "$data")
                if [[ -n "$turns_dir" ]]; then
                    args+=(--turns-dir "$turns_dir" --turn-order "$order" --turn-as "$fw")
                fi
                measure "results/offline_bc_${fw}.jsonl" "offline_bc_${fw}_r${r}.log" 900 \
                    offline_bc "$fw" offline_bc.py "${args[@]}" &
            done
            wait
            if [[ -n "$turns_dir" ]]; then rm -rf "$turns_dir"; fi
        done
        rm -rf "$data"
    fi
    if [[ $only == all || $only == offpolicy_speed ]]; then
        # TQC env steps/s and IQL rows/s of train(), in turns when both run; IQL's rows recorded once.
        data="$(mktemp -d)"
        : > results/iql_data.jsonl
        measure results/iql_data.jsonl iql_data.log 600 iql_data flywheel offpolicy_speed.py --record "$data"
        for algo in tqc iql; do
            for fw in rllib flywheel; do
                has "$fw" && : > "results/${algo}_speed_${fw}.jsonl"
            done
            for r in $(seq 1 "$repeats"); do
                turns_dir=""
                if has rllib && has flywheel; then turns_dir="$(mktemp -d)"; fi
                for fw in rllib flywheel; do
                    has "$fw" || continue
                    args=(--algo "$algo" --framework "$fw" --data "$data" --torch-threads 1)
                    if [[ -n "$turns_dir" ]]; then
                        args+=(--turns-dir "$turns_dir" --turn-order rllib,flywheel --turn-as "$fw")
                    fi
                    measure "results/${algo}_speed_${fw}.jsonl" "${algo}_speed_${fw}_r${r}.log" 1800 \
                        "${algo}_speed" "$fw" offpolicy_speed.py "${args[@]}" &
                done
                wait
                if [[ -n "$turns_dir" ]]; then rm -rf "$turns_dir"; fi
            done
        done
        rm -rf "$data"
    fi
fi

"$py" report.py
echo "wrote $here/RESULTS.md" >&2
