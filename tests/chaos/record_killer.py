"""Kills recording env runners (`config.offline_data(output=...)`) and reports what they left behind.

Run by test_offline_faults.py as a subprocess. Flywheel is imported once; every round forks a child
that builds a `SingleAgentEnvRunner` recording CartPole to FOLDER (one row per step, MAX_ROWS rows per
file) and calls `sample(num_timesteps=STEPS)` in a loop, telling the parent through a pipe before each
call ("sampling") and after it ("sampled TOTAL", the steps its sample() calls returned so far)::

    python record_killer.py FOLDER RANDOM_ROUNDS SEED STEP_ROUNDS

RANDOM_ROUNDS children, recording to FOLDER/random, are SIGKILLed after a random (seeded) delay;
then STEP_ROUNDS children, recording to FOLDER/steps, kill themselves in their k-th file write
(round k - 1): with the temporary file half written (even k) or whole and not yet renamed (odd k).

Every child writes to the same folder (as restarted runners do), so each round also checks that the
earlier rounds' files are still intact. One JSON line per round: `mode` ("random" or "steps"), `round`, `delay_s`, `sampled` (the
last TOTAL reported), `in_sample` (killed inside a sample() call), `new_files` ({name: rows} of the
visible files this round added), `unreadable` (visible files that do not read whole, checksums
verified), `hidden` (names starting with "."), `rows_on_disk` (all rounds') and `gaps` (the episodes
whose rows on disk are not steps 0, 1, ..., n-1 each once: a row lost or written twice in between).
"""

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

import flywheel.offline.writer as writer_module
from flywheel import PPOConfig, SingleAgentEnvRunner

MAX_ROWS = 64
STEPS = 50  # per sample() call: files fill up after 1 or 2 calls, so the buffer holds 0..63 rows


def record(folder: Path, report_fd: int) -> None:
    """The child: records until killed."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .offline_data(output=str(folder), output_write_episodes=False, output_max_rows_per_file=MAX_ROWS)
        .debugging(seed=0)
    )
    runner = SingleAgentEnvRunner(config=config)
    total = 0
    while True:
        os.write(report_fd, b"sampling\n")
        total += sum(len(episode) for episode in runner.sample(num_timesteps=STEPS))
        os.write(report_fd, f"sampled {total}\n".encode())


def die_in_write(step: int) -> None:
    """Makes this process SIGKILL itself in its `step`-th file write: half of the temporary file written
    (even `step`), or the file written whole and not yet renamed (odd `step`)."""
    count = [0]
    write_table, replace = pq.write_table, os.replace

    def half_written(table, where, **kwargs):
        count[0] += 1
        write_table(table, where, **kwargs)
        if count[0] == step and step % 2 == 0:
            os.truncate(where, os.path.getsize(where) // 2)
            os.kill(os.getpid(), signal.SIGKILL)

    def renamed(source, target):
        if count[0] == step and step % 2 == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        replace(source, target)

    writer_module.pq.write_table = half_written
    writer_module.os.replace = renamed


def visible(folder: Path) -> set[str]:
    return {name for name in os.listdir(folder) if not name.startswith(".")}


def readable(path: Path) -> bool:
    try:
        pq.ParquetFile(path, page_checksum_verification=True).read()
    except Exception:  # noqa: BLE001 (any failure to read counts)
        return False
    return True


def run_round(folder: Path, round_: int, delay_s: float | None, step: int | None) -> dict:
    before = visible(folder)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            if step is not None:
                die_in_write(step)
            record(folder, write_end)
        finally:
            os._exit(1)  # never back into the parent's loop
    os.close(write_end)
    lines = ["sampled 0"]
    with os.fdopen(read_end) as reports:
        if delay_s is not None:
            lines.append(reports.readline().strip())  # "sampling"
            lines.append(reports.readline().strip())  # "sampled ...": the delay counts from here
            time.sleep(delay_s)
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        lines += reports.read().splitlines()
    sampled = [int(line.split()[1]) for line in lines if line.startswith("sampled")]
    steps: dict[str, list[int]] = {}
    for name in sorted(visible(folder)):
        table = pq.read_table(folder / name, columns=["eps_id", "t"]) if readable(folder / name) else None
        for eps_id, t in (
            zip(*(table.column(c).to_pylist() for c in ("eps_id", "t")), strict=True) if table else ()
        ):
            steps.setdefault(eps_id, []).append(t)
    return {
        "mode": folder.name,
        "round": round_,
        "delay_s": delay_s,
        "sampled": sampled[-1] if sampled else 0,
        "in_sample": lines[-1] == "sampling",
        "new_files": {
            name: pq.read_metadata(folder / name).num_rows for name in sorted(visible(folder) - before)
        },
        "unreadable": sorted(name for name in visible(folder) if not readable(folder / name)),
        "hidden": sorted(name for name in os.listdir(folder) if name.startswith(".")),
        "rows_on_disk": sum(len(ts) for ts in steps.values()),
        "gaps": sorted(eps_id for eps_id, ts in steps.items() if sorted(ts) != list(range(len(ts)))),
    }


if __name__ == "__main__":
    target, random_rounds, seed, step_rounds = Path(sys.argv[1]), *map(int, sys.argv[2:])
    rng = random.Random(seed)
    for mode, rounds in (("random", random_rounds), ("steps", step_rounds)):
        (target / mode).mkdir(parents=True)
        for round_ in range(rounds):
            delay, step = (rng.uniform(0.05, 1.0), None) if mode == "random" else (None, round_ + 1)
            print(json.dumps(run_round(target / mode, round_, delay, step)), flush=True)
