"""Kills processes in the middle of saves and reports what is left at the checkpoint path.

Run by test_atomic.py as a subprocess (a single-threaded process that forks its victims, so each
kill costs a fork, not a Python start-up)::

    python save_killer.py random PATH ROUNDS SEED    # a child saves in a loop; SIGKILL after a random delay
    python save_killer.py steps PATH [no-exchange]   # round k: the child kills itself before its k-th
                                                     # file system operation of one save, k = 1, 2, ...

After every kill it loads the path and prints one JSON line per round: `{"round", "state"}` where
state is the loaded `{"v": ...}` (or `{"error": message}`), `"leftovers"` (the names next to the
path), and, after the next save, `"after_next_save"` (what that save left next to the path).
"""

import json
import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path

import numpy as np

from flywheel.checkpoints import Checkpointable, atomic, io
from flywheel.checkpoints.tree import read_tree, tree_state
from flywheel.errors import CheckpointError


class Part(Checkpointable):
    def __init__(self, value=0):
        self.value = value

    def get_state(self, components=None, not_components=None, **kwargs):
        return {"v": self.value, "weights": np.full(50_000, self.value, np.float32)}

    def set_state(self, state):
        self.value = state["v"]

    def get_ctor_args_and_kwargs(self):
        return (), {}


class Whole(Part):
    """Three parts, so a save writes a dozen files in four directories."""

    def get_checkpointable_components(self):
        return [(f"part{i}", Part(self.value)) for i in range(3)]

    def get_state(self, components=None, not_components=None, **kwargs):
        return {"v": self.value}


def loaded(path: Path) -> dict:
    try:
        state = tree_state(read_tree(path))
    except CheckpointError as e:
        return {"error": str(e)}
    assert all(state[f"part{i}"]["v"] == state["v"] for i in range(3)), "parts of different saves"
    return {"v": state["v"]}


def report(path: Path, round_: int) -> None:
    state = loaded(path)
    leftovers = sorted(name for name in os.listdir(path.parent) if name != path.name)
    Whole(-1).save_to_path(path)
    after = sorted(name for name in os.listdir(path.parent) if name != path.name)
    print(
        json.dumps({"round": round_, "state": state, "leftovers": leftovers, "after_next_save": after}),
        flush=True,
    )


def kill_at_random(path: Path, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    start = time.perf_counter()
    Whole(0).save_to_path(path)
    save_s = time.perf_counter() - start
    for round_ in range(rounds):
        pid = os.fork()
        if pid == 0:
            value = 1
            while True:
                Whole(value).save_to_path(path)
                value += 1
        time.sleep(rng.uniform(0, 3 * save_s))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        report(path, round_)


def kill_at_each_step(path: Path, use_exchange: bool) -> None:
    if not use_exchange:
        atomic.exchange = lambda a, b: False
    step = 0
    while True:
        step += 1
        Whole(0).save_to_path(path)
        pid = os.fork()
        if pid == 0:
            _die_before_operation(step)
            Whole(1).save_to_path(path)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        report(path, step)
        if os.WIFEXITED(status):  # the save finished before its `step`-th operation: all points covered
            return


def _die_before_operation(step: int) -> None:
    """Makes this process SIGKILL itself right before its `step`-th file system operation."""
    count = [0]

    def counting(fn):
        def wrapper(*args, **kwargs):
            count[0] += 1
            if count[0] == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return fn(*args, **kwargs)

        return wrapper

    os.rename, os.mkdir, shutil.rmtree = counting(os.rename), counting(os.mkdir), counting(shutil.rmtree)
    io.write_bytes, atomic.exchange = counting(io.write_bytes), counting(atomic.exchange)


if __name__ == "__main__":
    mode, target = sys.argv[1], Path(sys.argv[2])
    if mode == "random":
        kill_at_random(target, int(sys.argv[3]), int(sys.argv[4]))
    else:
        kill_at_each_step(target, use_exchange=sys.argv[3:] != ["no-exchange"])
