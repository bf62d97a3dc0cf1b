"""APPO on CartPole-v1, flywheel or RLlib 2.60: `train()` env steps/s, or wall-clock to a last-100 mean of 450.

    python bench/train_appo.py --framework rllib --mode throughput --num-env-runners 2
    python bench/train_appo.py --framework flywheel --mode to450 --settings flywheel --seed 0

Both frameworks get the same config from `settings()`: `rllib` is RLlib's tuned CartPole APPO
(shared value layers, vf_loss_coeff 0.05, no entropy bonus, RLlib's APPO defaults otherwise),
`flywheel` is the one flywheel's learning test uses (lr 1e-3, 4 passes over each train batch in
minibatches of 250, a 64x64 network). Both train in the driver (`num_learners=0`; RLlib's default
is one remote learner, which on two cores only adds a process) with remote runners of 0.5 CPU each
in a Ray of 2 CPUs started here. Finished episodes reach the driver through a small Ray actor
(`on_episode_end` on the runners), so the stop criterion is the same for both: the mean return of
the last 100 finished episodes. With `--turns-dir`, the timed `train()` calls of `throughput` are
taken in turns with the peer processes (see turns.py). Prints one JSON line.
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
        },
        "rl_module": {"model_config": {"fcnet_hiddens": [64, 64], "vf_share_layers": True}},
    }


class Returns:
    """A Ray actor the runners send each finished episode's return to."""

    def __init__(self) -> None:
        self.returns: list[float] = []

    def add(self, value: float) -> None:
        self.returns.append(value)

    def take(self) -> list[float]:
        out, self.returns = self.returns, []
        return out


def build(framework: str, setting: str, num_env_runners: int, seed: int, returns_name: str) -> Any:
    import ray

    def on_episode_end(*, episode, **kwargs):
        ray.get_actor(returns_name).add.remote(float(episode.get_return()))

    if framework == "flywheel":
        from flywheel import APPOConfig
    else:
        from ray.rllib.algorithms.appo import APPOConfig
    config = APPOConfig().environment("CartPole-v1").learners(num_learners=0).debugging(seed=seed)
    for section, kwargs in settings(setting, num_env_runners).items():
        getattr(config, section)(**kwargs)
    config.reporting(min_time_s_per_iteration=1).callbacks(on_episode_end=on_episode_end)
    return config.build_algo()


def lifetime_steps(result: dict) -> int:
    runners = result["env_runners"]
    return int(runners.get("num_env_steps_sampled_lifetime", result.get("num_env_steps_sampled_lifetime", 0)))


def throughput(algo: Any, args: argparse.Namespace) -> dict:
    """`train()` env steps/s: one warm-up call, then timed calls (in turns with the peers if asked).
    Also the per-step costs the scaling estimate in RESULTS.md is computed from (see `costs`)."""
    result = algo.train()
    last = lifetime_steps(result)
    turns = Turns(args.turns_dir, args.turn_order.split(","), args.turn_as) if args.turns_dir else None
    per_turn: list[float] = []
    steps = seconds = cpu = 0.0
    if turns is not None:
        turns.ready()
    for _ in range(turns.rounds if turns else 1):
        at_least = turns.wait() if turns else args.min_seconds
        start, cpu_start, first = time.perf_counter(), time.process_time(), last
        while time.perf_counter() - start < at_least:
            result = algo.train()
            last = lifetime_steps(result)
        took = time.perf_counter() - start
        if turns:
            turns.pass_on(took)
        per_turn.append(round((last - first) / took, 1))
        steps, seconds, cpu = steps + last - first, seconds + took, cpu + time.process_time() - cpu_start
    return {
        "steps_per_s": round(steps / seconds, 1),
        "per_turn_steps_per_s": per_turn,
        "timed_s": round(seconds, 1),
        **costs(result, steps, cpu, args),
    }


def costs(result: dict, steps: float, driver_cpu_s: float, args: argparse.Namespace) -> dict:
    """Per env step: the driver's CPU time (collecting samples, learning, syncing), and, from the last
    result's timers, a runner's `sample()` time and the learner's update time (flywheel's keys)."""
    out: dict[str, Any] = {"driver_cpu_us_per_step": round(1e6 * driver_cpu_s / steps, 2) if steps else None}
    config = settings(args.settings, args.num_env_runners)
    per_sample = 50 * config["env_runners"]["num_envs_per_env_runner"]  # rollout_fragment_length 50
    sample_s = result.get("env_runners", {}).get("timers", {}).get("sample")
    update_s = result.get("timers", {}).get("learner_update_timer")
    if sample_s:
        out["runner_us_per_step"] = round(1e6 * sample_s / per_sample, 2)
    if update_s:  # one update trains on whole fragments adding up to the train batch (500 env steps)
        out["learner_us_per_trained_step"] = round(1e6 * update_s / (-(-500 // per_sample) * per_sample), 2)
    return out


def to_threshold(algo: Any, returns: Any, args: argparse.Namespace) -> dict:
    """Trains until the last 100 finished episodes average 475 (recording 450) or `--max-seconds`."""
    import ray

    tracker = EpisodeReturnTracker()
    clock = ThresholdClock(tracker)
    clock.start_training()
    steps = 0
    while since_start() < args.max_seconds:
        steps = lifetime_steps(algo.train())
        for value in ray.get(returns.take.remote()):
            tracker.add_finished(value)
        if clock.check(steps):
            break
    return clock.result(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=["flywheel", "rllib"], required=True)
    parser.add_argument("--mode", choices=["throughput", "to450"], required=True)
    parser.add_argument("--settings", choices=["rllib", "flywheel"], default="rllib")
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
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
        name = f"appo_returns_{uuid.uuid4().hex[:8]}"
        returns = ray.remote(num_cpus=0)(Returns).options(name=name).remote()
        algo = build(args.framework, args.settings, args.num_env_runners, args.seed, name)
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
        "seed": args.seed,
    }
    run_guarded(meta, body)


if __name__ == "__main__":
    main()
