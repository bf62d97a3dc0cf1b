"""APPO on CartPole-v1, flywheel or RLlib 2.60: `train()` env steps/s, or wall-clock to a last-100 mean of 450.

    python bench/train_appo.py --framework rllib --mode throughput --num-env-runners 2
    python bench/train_appo.py --framework flywheel --mode to450 --settings flywheel --seed 0

Both frameworks get the same config from `settings()`: `rllib` is RLlib's tuned CartPole APPO
(shared value layers, vf_loss_coeff 0.05, no entropy bonus, RLlib's APPO defaults otherwise),
`flywheel` is the one flywheel's learning test uses (lr 1e-3, 4 passes over each train batch in
minibatches of 250, a 64x64 network). Both train in the driver (`num_learners=0`; RLlib's default
is one remote learner, which on two cores only adds a process) with remote runners of 0.5 CPU each
in a Ray of 2 CPUs started here.

`to450` stops at the same criterion for both: the mean return of the last 100 finished episodes.
The runners' `on_sample_end` sends each episode chunk's id, return and end to a small Ray actor, and
the chunks are summed per episode (a chunk's `get_return()`, also in `on_episode_end`, is only the
return since the episode's previous chunk). The frameworks' own `episode_return_mean` is recorded
next to it but not used: flywheel's is the last 100 episodes, RLlib 2.60's the mean of this
iteration's per-sample means (its runners clear their windows on every `get_metrics()`).
`throughput` installs no callback, so only the framework is timed; with `--turns-dir` its timed
`train()` calls are taken in turns with the peer processes (see turns.py). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

from benchlib import EpisodeReturnTracker, ThresholdClock, run_guarded, since_start
from turns import Turns


def settings(name: str, num_env_runners: int) -> dict[str, dict]:
    """The config sections, by section method."""
    runners = {"num_env_runners": num_env_runners, "num_cpus_per_env_runner": 0.5}
    if name == "rllib":
        return {
            "env_runners": {**runners, "num_envs_per_env_runner": 8},
            "training": {"vf_loss_coeff": 0.05, "entropy_coeff": 0.0},
            "rl_module": {"model_config": {"vf_share_layers": True}},
        }
    return {
        "env_runners": {**runners, "num_envs_per_env_runner": 4},
        "training": {
            "lr": 1e-3,
            "vf_loss_coeff": 0.05,
            "entropy_coeff": 0.0,
            "circular_buffer_iterations_per_batch": 4,
            "minibatch_size": 250,
            "shuffle_batch_per_epoch": True,  # flywheel's default; RLlib's is False
        },
        "rl_module": {"model_config": {"fcnet_hiddens": [64, 64], "vf_share_layers": True}},
    }


class Returns:
    """A Ray actor the runners send their episode chunks to, as (episode id, return, is done)."""

    def __init__(self) -> None:
        self.chunks: list[tuple[str, float, bool]] = []

    def add(self, chunks: list[tuple[str, float, bool]]) -> None:
        self.chunks.extend(chunks)

    def take(self) -> list[tuple[str, float, bool]]:
        out, self.chunks = self.chunks, []
        return out


class SendChunks:
    """`on_sample_end` on each runner: the sampled chunks to the `Returns` actor named `name`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.actor: Any = None  # looked up once per runner, on its first sample

    def __call__(self, *, samples: list, **kwargs: Any) -> None:
        import ray

        if self.actor is None:
            self.actor = ray.get_actor(self.name)
        self.actor.add.remote([(e.id_, float(e.get_return()), bool(e.is_done)) for e in samples])


def build(args: argparse.Namespace, returns_name: str | None) -> Any:
    """The algorithm; with `returns_name`, its runners send their episode chunks to that actor."""
    if args.framework == "flywheel":
        from flywheel import APPOConfig
    else:
        from ray.rllib.algorithms.appo import APPOConfig
    config = APPOConfig().environment("CartPole-v1").learners(num_learners=0).debugging(seed=args.seed)
    for section, kwargs in settings(args.settings, args.num_env_runners).items():
        getattr(config, section)(**kwargs)
    config.env_runners(max_requests_in_flight_per_env_runner=args.max_requests_in_flight)
    config.reporting(min_time_s_per_iteration=1, metrics_num_episodes_for_smoothing=100)
    if returns_name is not None:
        config.callbacks(on_sample_end=SendChunks(returns_name))
    return config.build_algo()


def lifetime_steps(result: dict) -> int:
    runners = result["env_runners"]
    return int(runners.get("num_env_steps_sampled_lifetime", result.get("num_env_steps_sampled_lifetime", 0)))


def trained_steps(result: dict) -> int:
    """Lifetime env steps trained (flywheel logs them at the top level, RLlib under `learners`)."""
    key = "num_env_steps_trained_lifetime"
    return int(result.get(key) or result.get("learners", {}).get("__all_modules__", {}).get(key, 0))


class CpuClock:
    """CPU seconds (not wall-clock: the machine is shared) of the driver process, of the remote
    runners' processes together and, for flywheel, whose local learner updates in the driver's
    thread, of the learner's updates (`learner_group.update` timed with `time.thread_time`)."""

    def __init__(self, algo: Any, framework: str) -> None:
        self.algo = algo
        self.learner_s: float | None = None
        if framework == "flywheel":
            self.learner_s = 0.0
            update = algo.learner_group.update

            def timed_update(*args: Any, **kwargs: Any) -> Any:
                start = time.thread_time()
                try:
                    return update(*args, **kwargs)
                finally:
                    self.learner_s += time.thread_time() - start

            algo.learner_group.update = timed_update

    def read(self) -> list[float]:
        """[driver, runners, learner (0.0 when not measured)] CPU seconds so far."""
        # A lambda goes to the runners by value (a module function would need this script importable there).
        runners = self.algo.env_runner_group.foreach_env_runner(
            lambda runner: time.process_time(), local_env_runner=False
        )
        return [time.process_time(), sum(runners), self.learner_s or 0.0]


def throughput(algo: Any, args: argparse.Namespace) -> dict:
    """`train()` env steps/s: one warm-up call, then timed calls (in turns with the peers if asked).
    Also the CPU cost per env step of the driver, the runners and the learner over the timed calls,
    which the scaling estimate in RESULTS.md is computed from."""
    cpu_clock = CpuClock(algo, args.framework)
    result = algo.train()
    last = lifetime_steps(result)
    turns = Turns(args.turns_dir, args.turn_order.split(","), args.turn_as) if args.turns_dir else None
    per_turn: list[float] = []
    steps = seconds = 0.0
    cpu = [0.0, 0.0, 0.0]
    between_turns_s, cpu_end = 0.0, None
    trained = -trained_steps(result)
    if turns is not None:
        turns.ready()
    for _ in range(turns.rounds if turns else 1):
        at_least = turns.wait() if turns else args.min_seconds
        cpu_start = cpu_clock.read()
        if cpu_end is not None:  # what this framework's processes used while the peer was timed
            between_turns_s += sum(cpu_start[:2]) - sum(cpu_end[:2])
        start, first = time.perf_counter(), last
        while time.perf_counter() - start < at_least:
            result = algo.train()
            last = lifetime_steps(result)
        took = time.perf_counter() - start
        if turns:
            turns.pass_on(took)
        per_turn.append(round((last - first) / took, 1))
        steps, seconds = steps + last - first, seconds + took
        cpu_end = cpu_clock.read()
        cpu = [total + now - before for total, now, before in zip(cpu, cpu_end, cpu_start)]
    trained += trained_steps(result)
    return {
        "steps_per_s": round(steps / seconds, 1),
        "per_turn_steps_per_s": per_turn,
        "timed_s": round(seconds, 1),
        "cpu_s_between_turns": round(between_turns_s, 2) if turns else None,
        **costs(steps, trained, cpu, learner_measured=cpu_clock.learner_s is not None),
    }


def costs(steps: float, trained: int, cpu: list[float], learner_measured: bool) -> dict:
    """CPU µs per env step sampled of the driver and of the runners; with the learner measured, its
    CPU µs per env step trained and the driver's without it (its own loop: collecting fragments,
    metrics, posting weights). Also the env steps trained per env step sampled (the circular
    buffer's passes over each batch, less what it dropped)."""
    driver_s, runners_s, learner_s = cpu
    out: dict[str, Any] = {
        "driver_cpu_us_per_step": round(1e6 * driver_s / steps, 2),
        "runner_cpu_us_per_step": round(1e6 * runners_s / steps, 2) if runners_s else None,
        "trained_per_sampled_step": round(trained / steps, 3),
    }
    if learner_measured and trained:
        out["learner_cpu_us_per_trained_step"] = round(1e6 * learner_s / trained, 2)
        out["driver_loop_cpu_us_per_step"] = round(1e6 * (driver_s - learner_s) / steps, 2)
    return out


def to_threshold(algo: Any, returns: Any, args: argparse.Namespace) -> dict:
    """Trains until the last 100 finished episodes average 475 (recording 450) or `--max-seconds`;
    `curve`: every 10 s of training, [env steps, last-100 mean, the framework's episode_return_mean]."""
    import ray

    tracker = EpisodeReturnTracker()
    clock = ThresholdClock(tracker)
    clock.start_training()
    steps, curve, next_point = 0, [], 0.0
    while since_start() < args.max_seconds:
        result = algo.train()
        steps = lifetime_steps(result)
        for chunk in ray.get(returns.take.remote()):
            tracker.add_chunk(*chunk)
        done = clock.check(steps)
        if done or time.time() - clock.train_start >= next_point:
            mean, reported = tracker.mean_last_100(), result["env_runners"].get("episode_return_mean")
            curve.append([steps, mean and round(mean, 1), reported and round(float(reported), 1)])
            next_point += 10.0
        if done:
            break
    return {**clock.result(steps), "curve": curve}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=["flywheel", "rllib"], required=True)
    parser.add_argument("--mode", choices=["throughput", "to450"], required=True)
    parser.add_argument("--settings", choices=["rllib", "flywheel"], default="rllib")
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-requests-in-flight", type=int, default=1, help="sample() calls per runner (RLlib's default 1)"
    )
    parser.add_argument(
        "--min-seconds", type=float, default=20.0, help="throughput without turns: time this long"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=600.0, help="to450: wall-clock cap from process start"
    )
    parser.add_argument("--turns-dir")
    parser.add_argument("--turn-order")
    parser.add_argument("--turn-as")
    args = parser.parse_args()

    def body() -> dict:
        import ray

        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        name = returns = None
        if args.mode == "to450":
            name = f"appo_returns_{uuid.uuid4().hex[:8]}"
            returns = ray.remote(num_cpus=0)(Returns).options(name=name).remote()
        algo = build(args, name)
        startup_s = round(since_start(), 1)
        try:
            if args.mode == "throughput":
                return {**throughput(algo, args), "startup_s": startup_s}
            return to_threshold(algo, returns, args)
        finally:
            algo.stop()

    meta = {
        "bench": f"appo_{args.mode}",
        "framework": args.framework,
        "settings": args.settings,
        "num_env_runners": args.num_env_runners,
        "max_requests_in_flight": args.max_requests_in_flight,
        "seed": args.seed,
    }
    run_guarded(meta, body)


if __name__ == "__main__":
    main()
