"""Prints the machine facts that go at the top of RESULTS.md, as one JSON object."""

import datetime
import json
import os
import platform
import subprocess
from importlib import metadata


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def git_commit() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def autogroup() -> str | None:
    """The scheduler group and its nice value (`/autogroup-N nice -20`), None where autogroup is off."""
    try:
        with open("/proc/self/autogroup") as f:
            return f.read().strip()
    except OSError:
        return None


def main() -> None:
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    facts = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": cpu_model(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "loadavg_1m_at_start": round(os.getloadavg()[0], 2),
        "nice": os.nice(0),
        "autogroup": autogroup(),
        "openblas_env": {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")},
        "flywheel_commit": git_commit(),
        **{
            name: version(name)
            for name in ("torch", "ray", "stable_baselines3", "gymnasium", "numpy", "flywheel")
        },
    }
    print(json.dumps(facts, sort_keys=True))


if __name__ == "__main__":
    main()
