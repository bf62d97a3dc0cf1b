"""The `flywheel` command line: `train`, `evaluate`, `plot`, `record` and `port` (API.md §11).

    flywheel train --algo PPO --env CartPole-v1 --stop-reward 475 --checkpoint-dir runs/cartpole
    flywheel evaluate runs/cartpole/checkpoint --episodes 10
    flywheel plot runs/cartpole_seed0 runs/cartpole_seed1 -o curves.png
    flywheel port my_rllib_project/ -o ported/   # writes ported/my_rllib_project/...

Settings are layered: the algorithm's defaults, then `--config FILE`, then `--env`/`--num-envs`/
`--seed`, then each `--set key=value` in order. Mistakes a user can make (a bad setting, env id or
path) print one ``flywheel <command>: error: ...`` line on stderr and exit with code 2.

Only the standard library and the (torch-free) algorithm registry are imported up front, so
`flywheel --help` answers at once; torch, the algorithms and libcst (for `port`) are imported when a
command runs.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import runpy
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flywheel.algorithms.registry import algorithm_name, available_algorithms, config_class
from flywheel.errors import CheckpointError, ConfigError, FlywheelError, UntrustedCheckpointError

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

EXIT_LEFT_TO_PORT = 1
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
CURVES_FILE = "curves.png"
FINAL_CHECKPOINT = "checkpoint"  # periodic ones are checkpoint_<iteration:06d>


# ------------------------------------------------------------------------------------- settings


def parse_setting(text: str) -> tuple[str, Any]:
    """``"key=value"`` -> ``(key, value)``; the value is a Python literal if it parses as one, else the string.

    ``lr=3e-4`` -> 0.0003, ``explore=False`` -> False, ``model_config={'fcnet_hiddens': [64]}`` -> a dict,
    ``env=CartPole-v1`` -> "CartPole-v1".
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set expects key=value (e.g. --set lr=0.001), got {text!r}.")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()
    return key, value


def apply_settings(config: AlgorithmConfig, settings: dict[str, Any], source: str) -> None:
    """`config.update_from_dict(settings)`, its TypeError for an unknown key turned into a ConfigError."""
    try:
        config.update_from_dict(settings)
    except TypeError as err:
        raise ConfigError(f"{source}: {err}") from err


def _load_yaml(text: str) -> Any:
    """yaml.safe_load that also reads ``3e-4`` as a float (YAML 1.1 only knows ``3.0e-4``)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # Appended after the int and float resolvers, so it only sees what they left as a string.
    exponent_float = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", exponent_float, list("-+0123456789"))
    return yaml.load(text, Loader=Loader)  # a SafeLoader subclass: no arbitrary objects


def load_config_file(path: str, default_class: type) -> Any:
    """The config a file describes.

    A ``.py`` file defines ``config`` (an AlgorithmConfig) or a function ``config()`` returning one;
    a ``.yaml``/``.yml``/``.json`` file holds a mapping of settings applied to ``default_class()``.
    """
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"--config {path}: no such file. Fix: pass the path of a .py, .yaml or .json file.")
    suffix = file.suffix.lower()
    if suffix == ".py":
        found = runpy.run_path(str(file)).get("config")
        config = found() if callable(found) and not isinstance(found, AlgorithmConfig) else found
        if not isinstance(config, AlgorithmConfig):
            got = "no `config`" if found is None else f"{type(config).__name__} from `config`"
            raise ConfigError(
                f"--config {path}: expected the file to define `config` (an AlgorithmConfig such as "
                f"PPOConfig()) or a function `config()` returning one, got {got}."
            )
        return config
    if suffix not in (".yaml", ".yml", ".json"):
        raise ConfigError(f"--config {path}: expected a .py, .yaml, .yml or .json file, got {suffix!r}.")
    text = file.read_text()
    settings = json.loads(text) if suffix == ".json" else _load_yaml(text)
    if not isinstance(settings, dict):
        raise ConfigError(
            f"--config {path}: expected a mapping of settings (e.g. `lr: 0.001`), got {type(settings).__name__}."
        )
    config = default_class()
    apply_settings(config, settings, f"--config {path}")
    return config


RECIPES = {"PPO": {"lr": 3e-4, "num_epochs": 10, "clip_param": 0.2, "use_kl_loss": False, "lambda_": 0.95}}
"""Settings `flywheel train` puts over an algorithm's defaults (RLlib's) when no --config is given:
PPO's faster recipe for small envs such as CartPole (RLlib's defaults learn it more slowly)."""


def make_config(args: argparse.Namespace) -> tuple[str, Any]:
    """(algorithm name, config) from the defaults, --config, --env/--num-envs/--seed and --set, in that order."""
    algo = args.algo or "PPO"
    default_class = config_class(algo)
    if args.config is None:
        config = default_class()
        apply_settings(config, RECIPES.get(algo, {}), f"the {algo} recipe")
    else:
        config = load_config_file(args.config, default_class)
        if args.algo is not None and not isinstance(config, default_class):
            raise ConfigError(
                f"--algo {args.algo} expects a {default_class.__name__}, but --config {args.config} gives a "
                f"{type(config).__name__}. Fix: drop --algo or make the file build a {default_class.__name__}."
            )
        algo = algorithm_name(type(config))
    if args.env is not None:
        config.environment(args.env)
    if args.num_envs is not None:
        config.env_runners(num_envs_per_env_runner=args.num_envs)
    if args.seed is not None:
        config.debugging(seed=args.seed)
    for text in args.set:
        key, value = parse_setting(text)
        apply_settings(config, {key: value}, f"--set {text}")
    return algo, config


# ------------------------------------------------------------------------------------- commands


class _PeriodicCheckpoints:
    """Saves ``<run_dir>/checkpoint_<iteration:06d>`` every `every` iterations, keeping the newest `keep_last`."""

    def __init__(self, algo: Any, run_dir: Path, every: int | None, keep_last: int | None) -> None:
        self.algo, self.run_dir, self.every, self.keep_last = algo, run_dir, every, keep_last
        self.saved: list[Path] = []

    def __call__(self, result: dict[str, Any]) -> None:
        iteration = result["training_iteration"]
        if not self.every or iteration % self.every:
            return
        self.saved.append(Path(self.algo.save_to_path(str(self.run_dir / f"checkpoint_{iteration:06d}"))))
        while self.keep_last is not None and len(self.saved) > self.keep_last:
            shutil.rmtree(self.saved.pop(0))


def _env_name(env: Any) -> str:
    name = env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
    return re.sub(r"[^\w.-]+", "-", name)


def train(args: argparse.Namespace) -> int:
    """`flywheel train`: trains until a stop condition, writing results and checkpoints to the run dir."""
    algo_name, config = make_config(args)
    from flywheel.reporting import (
        RESULTS_CSV,
        RESULTS_JSONL,
        VideoWriter,
        default_writers,
        describe_result,
        stop_reason,
        train_with_progress,
    )

    env_name = _env_name(config.env)
    algo = config.build_algo()
    run_dir = Path(args.checkpoint_dir or f"runs/{algo_name}_{env_name}_{time.strftime('%Y-%m-%d_%H-%M-%S')}")
    stops = {
        "stop_iters": args.stop_iters,
        "stop_timesteps": args.stop_timesteps,
        "stop_reward": args.stop_reward,
    }
    print(f"Training {algo_name} on {env_name}; run dir: {run_dir}", flush=True)
    if all(value is None for value in stops.values()):
        print("No --stop-iters/--stop-timesteps/--stop-reward given: training until interrupted (Ctrl-C).")
    writers = default_writers(run_dir)
    (videos,) = (writer for writer in writers if isinstance(writer, VideoWriter))
    try:
        result = train_with_progress(
            algo,
            **stops,
            writers=writers,
            progress_bar=not args.no_progress,
            on_result=_PeriodicCheckpoints(algo, run_dir, args.checkpoint_every, args.keep_last),
            desc=f"{algo_name} {env_name}",
        )
        checkpoint = algo.save_to_path(str(run_dir / FINAL_CHECKPOINT))
    finally:
        for writer in writers:
            writer.close()
        algo.stop()
    print(f"Stopped: {stop_reason(result, **stops)} ({describe_result(result)})")
    print(f"Checkpoint: {checkpoint}")
    print(f"Results: {run_dir / RESULTS_CSV}, {run_dir / RESULTS_JSONL}; tensorboard --logdir {run_dir}")
    print(_plot_line(run_dir))
    if videos.paths:
        print(
            f"Videos: {_count(len(videos.paths), 'mp4 file')} in {videos.video_dir} (newest: {videos.paths[-1]})"
        )
    return 0


def _plot_line(run_dir: Path) -> str:
    """Draws the run's learning curves into `run_dir/curves.png`; says where (or how to get them)."""
    from flywheel.reporting.plots import plot_runs

    try:
        return f"Learning curves: {plot_runs([run_dir], run_dir / CURVES_FILE)}"
    except FlywheelError as err:
        return f"Learning curves not drawn ({err})"


def plot(args: argparse.Namespace) -> int:
    """`flywheel plot`: draws the runs' learning curves (return vs env steps and vs wall time) into `-o`."""
    from flywheel.reporting.plots import plot_runs

    print(f"Learning curves: {plot_runs(args.runs, args.out, labels=args.labels, metric=args.metric)}")
    return 0


def _restore(path: str, *, trusted: bool, command: Callable[[str], str]) -> Any:
    """The algorithm saved at `path`; `command(path)` is the user's command line for a checkpoint at
    `path`, which the fixes of its errors show (the run dir's checkpoint, or `--trusted` added)."""
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(
            f"No checkpoint directory at {path!r}. Fix: pass a directory `flywheel train` saved, "
            "e.g. runs/<run>/checkpoint."
        )
    checkpoint = _checkpoint_of_run_dir(folder)
    if checkpoint is not None:
        raise CheckpointError(
            f"{path} is a run directory of `flywheel train`, not a checkpoint; its newest checkpoint is "
            f"{checkpoint}. Fix: {command(str(checkpoint))}"
        )
    from flywheel.algorithms.algorithm import Algorithm

    try:
        return Algorithm.from_checkpoint(path, trusted=trusted)
    except UntrustedCheckpointError as err:
        raise CheckpointError(
            f"{err.reason} Fix: if you trust this checkpoint, add --trusted: {command(path)} --trusted"
        ) from None


def _checkpoint_of_run_dir(folder: Path) -> Path | None:
    """The newest checkpoint in a run dir that is no checkpoint itself: its final `checkpoint`, else
    the newest periodic `checkpoint_<iteration>` (a run that was interrupted); None for other folders."""
    from flywheel.checkpoints.io import METADATA_FILE

    if (folder / METADATA_FILE).exists():
        return None
    if (folder / FINAL_CHECKPOINT / METADATA_FILE).exists():
        return folder / FINAL_CHECKPOINT
    periodic = sorted(
        path for path in folder.glob(f"{FINAL_CHECKPOINT}_*") if (path / METADATA_FILE).exists()
    )
    return periodic[-1] if periodic else None


def evaluate(args: argparse.Namespace) -> int:
    """`flywheel evaluate`: restores a checkpoint, samples `--episodes` episodes, prints their returns."""
    algo = _restore(args.path, trusted=args.trusted, command=lambda path: _evaluate_command(args, path))
    try:
        episodes = algo.env_runner.sample(num_episodes=args.episodes, explore=args.explore)
    finally:
        algo.stop()
    returns = [float(episode.get_return()) for episode in episodes]
    lengths = [len(episode) for episode in episodes]
    print(
        f"Evaluated {len(returns)} episodes (explore={args.explore}): return mean {sum(returns) / len(returns):.2f}, "
        f"min {min(returns):.2f}, max {max(returns):.2f}; length mean {sum(lengths) / len(lengths):.1f}"
    )
    return 0


def _evaluate_command(args: argparse.Namespace, path: str) -> str:
    """The user's `flywheel evaluate` command line (without --trusted), for the checkpoint at `path`."""
    explore = " --explore" if args.explore else ""
    return f"flywheel evaluate {path} --episodes {args.episodes}{explore}"


def _record_command(args: argparse.Namespace, path: str) -> str:
    """The user's `flywheel record` command line (without --trusted), for the checkpoint at `path`."""
    flags = "".join(
        f" --{flag.replace('_', '-')}" for flag in ("explore", "write_episodes") if getattr(args, flag)
    )
    return f"flywheel record --checkpoint {path} --episodes {args.episodes} --output {args.output}{flags}"


def record(args: argparse.Namespace) -> int:
    """`flywheel record`: restores a checkpoint and records `--episodes` episodes of its policy to Parquet
    files under `--output` (through a runner with `config.offline_data(output=...)`)."""
    algo = _restore(args.checkpoint, trusted=args.trusted, command=lambda path: _record_command(args, path))
    try:
        config = algo.config.copy().offline_data(
            output=args.output, output_write_episodes=args.write_episodes
        )
        runner = type(algo.env_runner)(config=config)
        runner.set_state({**algo.env_runner.get_state(), "weights_seq_no": 0})
        try:
            episodes = runner.sample(num_episodes=args.episodes, explore=args.explore)
        finally:
            runner.stop()  # writes the last file
    finally:
        algo.stop()
    steps = sum(len(episode) for episode in episodes)
    mean = sum(float(episode.get_return()) for episode in episodes) / len(episodes)
    print(f"Recorded {len(episodes)} episodes ({steps} env steps, return mean {mean:.2f}) to {args.output}")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def port(args: argparse.Namespace) -> int:
    """`flywheel port`: rewrites RLlib imports into flywheel's; prints each line left to port, exits 1 if any."""
    from flywheel.porting import port_paths

    report = port_paths(args.paths, out=args.out)
    for problem in report.problems:
        print(problem)
    files = _count(len(report.files), "Python file")
    where = f"written under {report.written_under}" if args.out else "rewritten in place"
    left = (
        f"{_count(len(report.problems), 'line')} to port by hand (above)"
        if report.problems
        else "nothing left to port"
    )
    print(f"flywheel port: {files}, {len(report.changed)} {where}; {left}", file=sys.stderr)
    return 0 if report.ok else EXIT_LEFT_TO_PORT


# --------------------------------------------------------------------------------------- parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `flywheel` argument parser with its `train`, `evaluate` and `port` commands."""
    parser = argparse.ArgumentParser(
        prog="flywheel", description="Train and evaluate flywheel algorithms; port RLlib code to flywheel."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "train",
        help="train an algorithm",
        description="Train an algorithm; results and checkpoints go to the run dir.",
    )
    run.set_defaults(handler=train)
    arg = run.add_argument
    arg("--algo", type=str.upper, choices=available_algorithms(), help="algorithm (default: PPO)")
    arg("--env", help="gymnasium id or register_env name, e.g. CartPole-v1")
    arg("--config", metavar="FILE", help=".py defining `config` (or `config()`), or .yaml/.json of settings")
    arg(
        "--set",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="override settings (repeatable)",
    )
    arg("--stop-reward", type=float, metavar="R", help="stop once env_runners/episode_return_mean >= R")
    arg("--stop-timesteps", type=_positive_int, metavar="N", help="stop after N sampled env steps")
    arg("--stop-iters", type=_positive_int, metavar="N", help="stop after N training iterations")
    arg("--checkpoint-dir", metavar="DIR", help="run dir (default: runs/<algo>_<env>_<timestamp>)")
    arg(
        "--checkpoint-every",
        type=_positive_int,
        metavar="N",
        help="also save a checkpoint every N iterations",
    )
    arg("--keep-last", type=_positive_int, metavar="K", help="keep only the last K periodic checkpoints")
    arg("--seed", type=int, help="random seed")
    arg("--num-envs", type=_positive_int, metavar="N", help="sub-envs per env runner")
    arg("--no-progress", action="store_true", help="do not draw the progress bar")

    check = commands.add_parser(
        "evaluate",
        help="evaluate a checkpoint",
        description="Restore a checkpoint and print episode returns.",
    )
    check.set_defaults(handler=evaluate)
    check.add_argument("path", help="checkpoint directory (e.g. runs/cartpole/checkpoint)")
    check.add_argument(
        "--episodes", type=_positive_int, default=10, metavar="N", help="episodes to run (default: 10)"
    )
    check.add_argument("--explore", action="store_true", help="sample actions instead of acting greedily")
    check.add_argument(
        "--trusted",
        action="store_true",
        help="import the classes the checkpoint names and unpickle its config's lambdas (only for checkpoints "
        "you trust: this runs code from the checkpoint)",
    )

    draw = commands.add_parser(
        "plot",
        help="draw learning curves of runs",
        description="Draw return against env steps and against wall time for one or more run dirs. Runs whose "
        "dir names differ only in a trailing _seed<N> (or --labels) share a label: their mean is drawn, with "
        "a band from the lowest to the highest run.",
    )
    draw.set_defaults(handler=plot)
    draw.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run dirs (or folders of run dirs)")
    draw.add_argument(
        "-o", "--out", default=CURVES_FILE, metavar="FILE", help="image to write (default: curves.png)"
    )
    draw.add_argument(
        "--labels",
        nargs="+",
        metavar="LABEL",
        help="one label per run dir (default: dir name without its _seed<N> suffix)",
    )
    draw.add_argument(
        "--metric",
        default="env_runners/episode_return_mean",
        metavar="KEY",
        help="results.csv column to draw (default: env_runners/episode_return_mean)",
    )
    rec = commands.add_parser(
        "record",
        help="record a checkpoint's policy to Parquet files",
        description="Restore a checkpoint and record episodes of its policy as offline data (docs/concepts/offline.md).",
    )
    rec.set_defaults(handler=record)
    rec.add_argument(
        "--checkpoint", required=True, help="checkpoint directory (e.g. runs/cartpole/checkpoint)"
    )
    rec.add_argument("--episodes", type=_positive_int, required=True, metavar="N", help="episodes to record")
    rec.add_argument("--output", required=True, metavar="OUT", help="folder to write the Parquet files to")
    rec.add_argument("--explore", action="store_true", help="sample actions instead of acting greedily")
    rec.add_argument(
        "--write-episodes", action="store_true", help="one row per episode instead of one row per step"
    )
    rec.add_argument("--trusted", action="store_true", help="as for `flywheel evaluate`")

    rewrite = commands.add_parser(
        "port",
        help="rewrite RLlib imports into flywheel's",
        description="Rewrite the ray.rllib imports of Python files or folders into flywheel's (docs/porting.md); "
        "print each line left to port as file:line: what it is: what to use instead.",
    )
    rewrite.set_defaults(handler=port)
    rewrite.add_argument(
        "paths", nargs="+", metavar="PATH", help="Python files or folders (searched recursively)"
    )
    rewrite.add_argument(
        "-o",
        "--out",
        metavar="OUT",
        help="write ported copies under OUT (mirroring the inputs) instead of in place",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit code (0 ok, 1 lines left to port by hand, 2 user error, 130 interrupted)."""
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except FlywheelError as err:
        print(f"flywheel {args.command}: error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print(f"flywheel {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
