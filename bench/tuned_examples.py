"""RLlib's tuned examples run as written: on flywheel after `flywheel port`, and on RLlib 2.60 unported.

RLlib keeps its tuned examples in its repository (`rllib/examples/algorithms/<algo>/*.py`); the wheel
does not ship them. Give this script a checkout of RLlib's repository at ray-2.60.0 (or any folder
holding `<algo>/<example>.py` files) and the examples to run:

    python bench/tuned_examples.py ~/ray --examples ppo/cartpole_ppo ppo/pendulum_ppo --seeds 0 1 2

Each example runs with `--as-test` and its own defaults, once per seed on each framework, in turns
(flywheel, RLlib, flywheel, ...), each run in its own child process:
- flywheel: the example and the wheel's `ray/rllib/examples` folder (the env classes the examples
  import) are ported with `flywheel port` into a temporary folder and run there, with `import
  ray.rllib` blocked in the child and in the Ray workers it starts;
- RLlib: the original file, unported.

RLlib 2.60's harness has no `--seed` flag: the child wraps the harness's
`run_rllib_example_script_experiment` (RLlib's, or flywheel's for the ported file) so the config gets
`.debugging(seed=<seed>)` just before the run, on both sides alike; the file is not edited. The same
wrapper adds a Tune callback that records every training result, from which the child reports the env
steps and seconds at which the return first reached the file's target.

Every run appends one JSON line to bench/results/tuned_examples.jsonl: framework, example, seed, passed
(the harness's own `--as-test` verdict: exit code 0), target, env steps and seconds to the target (None
if never reached), the final and best returns, the totals, the flags and the machine's load.
`bench/report.py` (report_tuned.py) turns the lines into RESULTS.md's section "RLlib's tuned examples".
The examples' defaults ask Ray for up to 6 CPUs (a driver, 4 env runners, 1 learner); on a 2-core
machine the trial would wait for them forever, so every run gets `--num-cpus=8` (Ray's logical CPUs,
oversubscribing the cores) unless `--flags` says otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
SRC = BENCH.parent / "src"
RESULTS = BENCH / "results" / "tuned_examples.jsonl"
RETURN_KEY = "env_runners/episode_return_mean"
EVAL_RETURN_KEY = f"evaluation/{RETURN_KEY}"
STEPS_KEY = "env_runners/num_env_steps_sampled_lifetime"


# ------------------------------------------------------------------------------ the child process


def _lookup(result: dict[str, Any], key: str) -> Any:
    """`result["a"]["b"]` or `result["a/b"]` for key "a/b" (None when missing or NaN)."""
    value: Any = result.get(key)
    if value is None:
        value = result
        for part in key.split("/"):
            value = value.get(part) if isinstance(value, dict) else None
    return None if isinstance(value, float) and math.isnan(value) else value


def success_metric(stop: dict, metric: dict | None, stop_reward: float) -> tuple[str, float]:
    """The key and target `--as-test` holds a run to, as the harness picks them: `success_metric`, else
    the evaluation or training return in `stop`, else the training return at `--stop-reward`."""
    if metric:
        key, value = next(iter(metric.items()))
        return key, float(value)
    for key in (EVAL_RETURN_KEY, RETURN_KEY):
        if key in stop:
            return key, float(stop[key])
    return RETURN_KEY, float(stop_reward)


def child(framework: str, seed: int | None, out: str, script: str, flags: list[str]) -> None:
    """Runs `script` as `__main__` with `flags`, the harness wrapped to seed the config and record results."""
    import runpy

    from ray import tune

    start = time.time()
    rows: list[dict[str, Any]] = []
    target: list[tuple[str, float]] = []

    class Record(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            key = target[0][0] if target else RETURN_KEY
            row = {"steps": _lookup(result, STEPS_KEY), "return": _lookup(result, key)}
            rows.append(row | {"seconds": time.time() - start, "iter": result.get("training_iteration")})

    if framework == "flywheel":
        import flywheel.examples_harness as harness
    else:
        import ray.rllib.examples.utils as harness  # the unported side
    original = harness.run_rllib_example_script_experiment

    def seeded(base_config, args=None, **kwargs):
        if seed is not None:
            base_config.debugging(seed=seed)
        stop_reward = getattr(args, "stop_reward", math.nan)
        target.append(success_metric(kwargs.get("stop") or {}, kwargs.get("success_metric"), stop_reward))
        kwargs["tune_callbacks"] = [*(kwargs.get("tune_callbacks") or []), Record()]
        return original(base_config, args, **kwargs)

    harness.run_rllib_example_script_experiment = seeded
    sys.argv = [script, *flags]
    sys.path.insert(0, str(Path(script).parent))
    error = None
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException as exc:  # reported in the JSON line, then re-raised for the exit code
        error = f"{type(exc).__name__}: {exc}"[:400]
        raise
    finally:
        metric, goal = target[0] if target else (RETURN_KEY, math.nan)
        reached = next((r for r in rows if r["return"] is not None and r["return"] >= goal), None)
        returns = [r["return"] for r in rows if r["return"] is not None]
        summary = {
            "metric": metric,
            "target": goal,
            "env_steps_to_target": reached and reached["steps"],
            "seconds_to_target": reached and round(reached["seconds"], 1),
            "final_metric": returns[-1] if returns else None,
            "best_metric": max(returns) if returns else None,
            "env_steps_total": rows[-1]["steps"] if rows else None,
            "iterations": rows[-1]["iter"] if rows else None,
            "error": error,
        }
        Path(out).write_text(json.dumps(summary))


# ------------------------------------------------------------------------------ the driver


def examples_folder(path: Path) -> Path:
    """The folder of `<algo>/<example>.py` files in a checkout of RLlib's repository (or `path` itself)."""
    inside = path / "rllib" / "examples" / "algorithms"
    return inside if inside.is_dir() else path


def port(files: list[Path], work: Path) -> Path:
    """Ports the wheel's `ray/rllib/examples` (the env classes the examples import) and `files` (under
    `algorithms/<algo>/`) into `work/examples` with `flywheel port`, as a user does; returns `work`.
    The report goes to `work/port.log`; an example file with a line left to port by hand stops the bench
    (the wheel's own folder has some, in scripts the tuned examples do not import)."""
    sys.path.insert(0, str(SRC))
    from flywheel.cli import main
    from flywheel.porting.rllib_blocker import write_rllib_blocker

    spec = find_spec("ray")
    if spec is None or spec.origin is None:
        raise SystemExit("tuned_examples: the ray wheel (RLlib 2.60) is not installed in this Python")
    with (
        (work / "port.log").open("w") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        main(["port", "-o", str(work), str(Path(spec.origin).parent / "rllib" / "examples")])
        for file in files:
            if main(["port", "-o", str(work / "examples" / "algorithms" / file.parent.name), str(file)]):
                raise SystemExit(
                    f"tuned_examples: {file} has lines flywheel port cannot port (see {log.name})"
                )
    write_rllib_blocker(work / "block")
    return work


def run_one(
    framework: str, example: str, seed: int | None, script: Path, flags: list[str], env: dict, timeout: float
) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, str(Path(__file__).resolve()), "--child", framework, str(seed), out.name]
        load = os.getloadavg()[0]
        start = time.time()
        try:
            done = subprocess.run(
                [*command, str(script), *flags],
                cwd=script.parent,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            code, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            code, output = -1, f"timed out after {timeout:.0f} s"
        seconds = time.time() - start
        summary = json.loads(Path(out.name).read_text() or "{}")
    log = BENCH / "results" / "logs" / f"tuned_{framework}_{example.replace('/', '_')}_{seed}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(output)
    return {
        "bench": "tuned_examples",
        "framework": framework,
        "example": example,
        "seed": seed,
        "passed": code == 0,
        "exit_code": code,
        **summary,
        "seconds_total": round(seconds, 1),
        "flags": flags,
        "load_start": round(load, 1),
        "load_end": round(os.getloadavg()[0], 1),
        "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }


def run(args: argparse.Namespace) -> None:
    folder = examples_folder(Path(args.rllib).expanduser().resolve())
    files = {name: folder / f"{name}.py" for name in args.examples}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise SystemExit(
            f"tuned_examples: no such example file(s): {missing} (expected <algo>/<name> under {folder})"
        )
    work = port(list(files.values()), Path(tempfile.mkdtemp(prefix="tuned_examples_")))
    base = {**os.environ, "RAY_DEDUP_LOGS": "0", "RAY_raylet_start_wait_time_s": "300"}
    base["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])
    envs = {
        "flywheel": base | {"PYTHONPATH": os.pathsep.join([str(work / "block"), str(work), str(SRC)])},
        "rllib": base,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    for name, file in files.items():
        for seed in args.seeds:
            for framework in args.frameworks:
                script = file
                if framework == "flywheel":
                    script = work / "examples" / "algorithms" / file.parent.name / file.name
                row = run_one(
                    framework, name, seed, script, ["--as-test", *args.flags], envs[framework], args.timeout
                )
                print(json.dumps(row), flush=True)
                with RESULTS.open("a") as results:
                    results.write(json.dumps(row) + "\n")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        framework, seed, out, script, *flags = sys.argv[2:]
        child(framework, None if seed == "None" else int(seed), out, script, flags)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rllib", help="a checkout of RLlib's repository at ray-2.60.0")
    parser.add_argument("--examples", nargs="+", default=["ppo/cartpole_ppo"], help="<algo>/<name>, no .py")
    parser.add_argument("--seeds", nargs="+", type=lambda s: None if s == "none" else int(s), default=[0])
    parser.add_argument(
        "--frameworks", nargs="+", default=["flywheel", "rllib"], choices=["flywheel", "rllib"]
    )
    parser.add_argument("--flags", nargs="*", default=["--num-cpus=8"], help="added to every run")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a run may take")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
