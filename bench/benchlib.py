"""Small helpers shared by the benchmark scripts: timing, peak memory, one-line JSON output.

Every benchmark script prints exactly one JSON line starting with `{"bench"`, so `run.sh` can
pick it out of whatever the framework under test logs to stdout.
Nothing here imports a framework; each script imports only the system it measures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from turns import Turns

THRESHOLDS = (450.0, 475.0)
WINDOW = 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def process_start_time() -> float:
    """Wall-clock time (epoch seconds) at which this process started, read from /proc.

    Startup figures count from here, so interpreter start and framework imports are included.
    """
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_ticks = int(fields[19])  # field 22 of stat(5), counted after the ")" of the command name
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return time.time() - uptime + start_ticks / os.sysconf("SC_CLK_TCK")


PROCESS_START = process_start_time()


def since_start() -> float:
    """Seconds since this process started."""
    return time.time() - PROCESS_START


def peak_rss_mb() -> float:
    """Peak resident memory of this process alone, in MiB (ru_maxrss is KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _tree_rss_bytes(root: int) -> int:
    """Current resident memory of `root` and all its descendants, read from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue  # the process ended while we looked
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        children = [c for c, p in parents.items() if p == pid and c not in tree]
        tree.update(children)
        frontier.extend(children)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE_SIZE
        except OSError:
            continue
    return total


class TreeMemorySampler:
    """Samples the resident memory of this process tree every 2 s (a scan costs ~20 ms), in a daemon thread.

    RLlib starts Ray's helper processes (GCS, raylet, workers) even with everything local;
    they cost the user memory too, and `ru_maxrss` never sees them while they run.
    """

    def __init__(self, interval_s: float = 2.0) -> None:
        self.peak = 0
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss_bytes(os.getpid()))
            self._stop.wait(self._interval_s)

    def stop(self) -> float:
        """Stops sampling and returns the peak in MiB."""
        self._stop.set()
        self._thread.join()
        return round(self.peak / 2**20, 1)


def emit(result: dict[str, Any]) -> None:
    """Print the one JSON result line, with the interpreter version and the machine's load attached.

    The 1-minute load average tells whether something else competed for the two cores.
    """
    result.setdefault("python", platform.python_version())
    result.setdefault("loadavg_1m", round(os.getloadavg()[0], 2))
    print(json.dumps(result, sort_keys=True), flush=True)


def run_guarded(meta: dict[str, Any], body: Callable[[], dict[str, Any]]) -> None:
    """Run a benchmark body and emit its result, or an `error` line if it raised.

    A framework that is missing or broken must not stop the other benchmarks: the report
    shows the error text in place of the numbers.
    """
    try:
        result = body()
    except Exception as exc:  # noqa: BLE001 - any failure becomes a reported result
        traceback.print_exc(file=sys.stderr)
        result = {"error": f"{type(exc).__name__}: {exc}"}
    emit({**meta, **result})


def time_sampling(
    sample: Callable[[int], int],
    *,
    num_timesteps: int,
    calls: int,
    warmup: int,
    min_seconds: float,
    turns: Turns | None = None,
) -> dict[str, Any]:
    """Time `sample(num_timesteps)` (returning steps taken) over at least `calls` calls after `warmup` calls.

    Fast samplers finish a call in tens of milliseconds, where one scheduler hiccup on a
    2-core machine moves the figure by half, so calls go on until `min_seconds` are timed.
    With `turns`, the timed calls happen in turns alternating with the peers' instead (see turns.py).
    """
    for _ in range(warmup):
        sample(num_timesteps)
    steps, seconds = [], []

    def timed_call() -> float:
        t0 = time.perf_counter()
        steps.append(sample(num_timesteps))
        seconds.append(time.perf_counter() - t0)
        return seconds[-1]

    extra: dict[str, Any] = {}
    if turns is None:
        while len(steps) < calls or sum(seconds) < min_seconds:
            timed_call()
    else:
        turns.ready()
        per_turn = []
        for _ in range(turns.rounds):
            at_least, first_call, took = turns.wait(), len(steps), 0.0
            while took < at_least or took == 0.0:
                took += timed_call()
            turns.pass_on(took)
            per_turn.append(round(sum(steps[first_call:]) / took, 1))
        extra = {"turns_with": turns.order, "per_turn_steps_per_s": per_turn}
    return {
        "env_steps_per_s": round(sum(steps) / sum(seconds), 1),
        "env_steps_timed": sum(steps),
        "seconds_timed": round(sum(seconds), 3),
        "per_call_steps_per_s": [round(n / s, 1) for n, s in zip(steps, seconds)],
        **extra,
    }


class EpisodeReturnTracker:
    """Sums returns over episode chunks and keeps the last 100 finished episodes.

    EnvRunners hand out chunks of ongoing episodes (same `id_` across calls), so a chunk's
    `get_return()` is only part of an episode's return; the parts are added up per `id_`
    until the chunk that is done.
    """

    def __init__(self) -> None:
        self._partial: dict[Any, float] = {}
        self.finished: deque[float] = deque(maxlen=WINDOW)
        self.num_finished = 0

    def add_chunks(self, episodes: Iterable[Any]) -> None:
        for episode in episodes:
            self.add_chunk(episode.id_, float(episode.get_return()), episode.is_done)

    def add_chunk(self, episode_id: Any, chunk_return: float, is_done: bool) -> None:
        """One chunk of episode `episode_id`, given by its id, return and whether it ends the episode."""
        ret = self._partial.pop(episode_id, 0.0) + chunk_return
        if is_done:
            self.add_finished(ret)
        else:
            self._partial[episode_id] = ret

    def add_finished(self, episode_return: float) -> None:
        self.finished.append(episode_return)
        self.num_finished += 1

    def mean_last_100(self) -> float | None:
        """Mean of the last 100 finished episodes, None until 100 have finished."""
        if len(self.finished) < WINDOW:
            return None
        return sum(self.finished) / WINDOW


class ThresholdClock:
    """Records the wall-clock time and env steps at which the last-100 mean first reaches each threshold.

    `check` is called by each training loop at its natural granularity (an iteration, a vector
    step); it returns True once the highest threshold is reached, so the loop can stop.
    """

    def __init__(self, tracker: EpisodeReturnTracker) -> None:
        self.tracker = tracker
        self.train_start: float | None = None
        self.first_result: float | None = None
        self.reached: dict[float, dict[str, float]] = {}
        self.memory = TreeMemorySampler()

    def start_training(self) -> None:
        self.train_start = time.time()

    def check(self, env_steps: int) -> bool:
        now = time.time()
        if self.first_result is None:
            self.first_result = now
        mean = self.tracker.mean_last_100()
        for threshold in THRESHOLDS:
            if mean is not None and mean >= threshold and threshold not in self.reached:
                self.reached[threshold] = {
                    "seconds": round(now - PROCESS_START, 2),
                    "train_seconds": round(now - self.train_start, 2),
                    "env_steps": int(env_steps),
                }
        return THRESHOLDS[-1] in self.reached

    def result(self, env_steps: int) -> dict[str, Any]:
        """The training result fields shared by all peers (see README.md for their meaning)."""
        out: dict[str, Any] = {
            "startup_s": round(self.first_result - PROCESS_START, 2) if self.first_result else None,
            "total_seconds": round(since_start(), 2),
            "total_env_steps": int(env_steps),
            "num_episodes": self.tracker.num_finished,
            "final_mean_last_100": self.tracker.mean_last_100(),
            "peak_rss_mb": peak_rss_mb(),
            "peak_tree_rss_mb": self.memory.stop(),
        }
        for threshold in THRESHOLDS:
            out[f"to_{int(threshold)}"] = self.reached.get(threshold)
        # Throughput up to the first threshold, or over the whole run when it was never reached.
        first = self.reached.get(THRESHOLDS[0])
        steps, seconds = (
            (first["env_steps"], first["train_seconds"])
            if first
            else (env_steps, time.time() - self.train_start)
        )
        out["steps_per_s"] = round(steps / seconds, 1) if seconds > 0 else None
        return out


def sampling_args(description: str) -> argparse.Namespace:
    """Command line shared by the sampling scripts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--num-envs", type=int, default=1, help="sub-envs in the vector env")
    parser.add_argument("--num-timesteps", type=int, default=4000, help="env steps per sample() call")
    parser.add_argument("--calls", type=int, default=5, help="timed sample() calls")
    parser.add_argument("--warmup", type=int, default=1, help="untimed sample() calls first")
    parser.add_argument(
        "--min-seconds", type=float, default=3.0, help="keep calling until this much is timed"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--turns-dir", help="take timed turns with peer processes sharing this directory (see turns.py)"
    )
    parser.add_argument("--turn-order", help="comma-separated names of the peers, the lead first")
    parser.add_argument("--turn-as", help="this process's name in --turn-order")
    parser.add_argument("--rounds", type=int, default=5, help="timed turns per process")
    return parser.parse_args()


def turns_of(args: argparse.Namespace) -> Turns | None:
    """The `Turns` that the sampling command line asks for, or None to time alone."""
    if not args.turns_dir:
        return None
    return Turns(args.turns_dir, args.turn_order.split(","), args.turn_as, rounds=args.rounds)


def time_sampling_args(sample: Callable[[int], int], args: argparse.Namespace) -> dict[str, Any]:
    """`time_sampling` with the settings of the sampling command line (turns included)."""
    return time_sampling(
        sample,
        num_timesteps=args.num_timesteps,
        calls=args.calls,
        warmup=args.warmup,
        min_seconds=args.min_seconds,
        turns=turns_of(args),
    )


def training_args(description: str) -> argparse.Namespace:
    """Command line shared by the training scripts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=600.0, help="wall-clock cap from process start")
    return parser.parse_args()
