"""`RemoteRunners`: the remote env runners of an `EnvRunnerGroup`, as Ray actors, and their faults.

The driving loop (what `EnvRunnerGroup` does with them)::

    calls = runners.call("sample", {index: (kwargs,) for index in runners.healthy()})
    results = runners.gather(calls)          # [(worker_index, result)] of the calls that succeeded
    runners.broadcast(state)                 # set_state on every healthy runner, without waiting

Failures (an env raising in a remote runner, a dead actor or node, a `sample()` slower than
`sample_timeout_s`) follow `config.fault_tolerance()`: the runner is killed and, with
`restart_failed_env_runners`, rebuilt after `delay_between_env_runner_restarts_s` with the current
weights and connector states; with `ignore_env_runner_failures` training goes on with fewer
runners; with both off the original exception is raised.

A new runner (at the start, or a replacement) is healthy once it answered its first call. One that
has not within `sample_timeout_s` (Ray cannot place it, e.g. its node is gone and no other node
has the CPUs it asks for, or its constructor hangs) is logged and left out until it starts; when
no runner can sample at all, `healthy()` raises `EnvError` naming the cause. Every failure,
timeout, restart and late start is logged (logger `flywheel.env_runners.remote_runners`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flywheel.errors import EnvError
from flywheel.ray_start import ensure_ray
from flywheel.seeding import derive_seed, seed_process

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

logger = logging.getLogger(__name__)

CONNECTORS = ("env_to_module_connector", "module_to_env_connector")
_STILL_WAITING_S = 60.0  # how often a wait without limit for a starting runner is logged


class RemoteRunners:
    """Remote runners with worker indices `1..config.num_env_runners`.

    Args:
        config: The (frozen) algorithm config.
        runner_class: The runner class each actor builds.
    """

    def __init__(self, config: AlgorithmConfig, runner_class: type) -> None:
        self.config = config
        self._runner_class = runner_class
        # Runners by worker index; None marks a failed runner (waiting for restart, or gone).
        self._actors: dict[int, Any] = {}
        # Runners that have not answered their first call yet: (that call, when they were created).
        self._starting: dict[int, tuple[Any, float]] = {}
        self._late: set[int] = set()  # starting runners already reported as late
        self._failed_at: dict[int, float] = {}
        self._counts = {"restarts": 0, "failures": 0, "timeouts": 0}
        self._runner_state: dict[str, Any] = {}  # what a (re)started runner receives: weights, connectors
        # Calls sent without waiting, per runner; checked with that runner's next result.
        self._unconfirmed: dict[int, list] = {}
        ensure_ray(config)
        self._remote_config = config_for_actors(config)
        for index in range(1, config.num_env_runners + 1):
            self._actors[index] = self._new_actor(index)

    def update_config(self, config: AlgorithmConfig) -> None:
        """Makes `config` the one runners restarted from now on get."""
        self.config = config
        self._remote_config = config_for_actors(config)

    # Calls.

    def call(self, method: str, args: dict[int, tuple]) -> dict[Any, int]:
        """Sends `method(*args[index])` to each runner `index`; returns `{object_ref: index}` for `gather`."""
        return {getattr(self._actors[i], method).remote(*a): i for i, a in args.items()}

    def gather(self, calls: dict) -> list[tuple[int, Any]]:
        """`(worker_index, result)` of the calls that succeeded in time; failures and calls still
        running after `sample_timeout_s` go to `_on_failure`."""
        import ray

        if not calls:
            return []
        done, pending = ray.wait(list(calls), num_returns=len(calls), timeout=self.config.sample_timeout_s)
        results = []
        for ref in done:
            ok, result = self.resolve(calls[ref], ref, self._unconfirmed.pop(calls[ref], []))
            if ok:
                results.append((calls[ref], result))
        for ref in pending:
            self.time_out(calls[ref])
        return results

    def submit(self, index: int, method: str, *args: object) -> tuple[Any, list]:
        """Sends `method(*args)` to runner `index` without waiting; returns its ref and the calls sent
        to the runner before it and not yet checked (pass both to `resolve`)."""
        return getattr(self._actors[index], method).remote(*args), self._unconfirmed.pop(index, [])

    def resolve(self, index: int, ref: Any, before: list) -> tuple[bool, Any]:
        """`(True, result)` of the finished call `ref` to runner `index`, after checking the calls
        `before` it; `(False, None)` when one of them failed (handled by `_on_failure`)."""
        import ray
        from ray.exceptions import RayError

        try:
            ray.get(before)  # ran before `ref` on the same actor
            return True, ray.get(ref)
        except RayError as error:
            self._on_failure(index, error)
            return False, None

    def time_out(self, index: int) -> None:
        """Runner `index` did not finish a call within `sample_timeout_s`: counted, then a failure."""
        self._counts["timeouts"] += 1
        self._on_failure(index, TimeoutError(_timeout_message(index, self.config.sample_timeout_s)))

    def actor(self, index: int) -> Any:
        """The actor now serving worker index `index` (None while it is failed)."""
        return self._actors.get(index)

    def broadcast(self, state: dict) -> None:
        """`set_state(state)` on every healthy runner, without waiting for it: an actor runs its calls in
        order, so its next `sample()` sees the state, and `gather` raises this call's failure together
        with that result (one round trip per iteration instead of two). Runners still starting get the
        latest state when they answer (`_collect_started`)."""
        import ray

        self.remember(state)
        state_ref = ray.put(state)
        for i in self.ready():
            self._unconfirmed.setdefault(i, []).append(self._actors[i].set_state.remote(state_ref))

    def remember(self, state: dict) -> None:
        """Makes `state` part of what every runner started from now on receives (`broadcast` calls it)."""
        self._runner_state.update(state)

    def reseed(self, salt: int) -> None:
        """`reseed(salt)` on every live runner (sent without waiting, checked with its next result)."""
        for i, actor in self._actors.items():
            if actor is not None:
                self._unconfirmed.setdefault(i, []).append(actor.reseed.remote(salt))

    def apply(self, func: Callable[[Any], Any]) -> list:
        """`func(runner)` in each healthy runner, in worker-index order (its errors are raised here;
        they do not count as runner failures)."""
        import ray

        return ray.get([self._actors[i].apply.remote(func) for i in self.healthy()])

    def counts(self) -> dict[str, int]:
        """Lifetime counts of runner failures, restarts and timeouts."""
        return dict(self._counts)

    def __len__(self) -> int:
        return len(self._actors)

    def stop(self) -> None:
        """Kills the runners; runners that record (`config.output`) first write what they buffered."""
        import ray

        if self.config.output is not None:
            stops = [actor.stop.remote() for actor in self._actors.values() if actor is not None]
            ray.wait(stops, num_returns=len(stops), timeout=self.config.sample_timeout_s)
        for actor in self._actors.values():
            if actor is not None:
                ray.kill(actor, no_restart=True)
        self._actors, self._starting = {}, {}

    # Faults.

    def _on_failure(self, index: int, error: BaseException) -> None:
        """Kills the failed runner; raises unless it will be restarted or may be ignored."""
        import ray
        from ray.exceptions import RayTaskError

        self._counts["failures"] += 1
        self._unconfirmed.pop(index, None)
        self._starting.pop(index, None)
        self._late.discard(index)
        actor, self._actors[index] = self._actors[index], None
        if actor is not None:
            ray.kill(actor, no_restart=True)
        config = self.config
        what = f"Env runner {index} failed: {_describe(error)}."
        if config.restart_failed_env_runners:
            if self._counts["restarts"] >= config.max_num_env_runner_restarts:
                raise EnvError(
                    f"Env runner {index} failed after {self._counts['restarts']} runner restarts, the maximum "
                    f"(max_num_env_runner_restarts={config.max_num_env_runner_restarts}). Fix the cause "
                    "below, or raise the limit in config.fault_tolerance()."
                ) from error
            logger.warning(
                "%s Restarting it in %g s (restarts so far: %d of at most %d).",
                what, config.delay_between_env_runner_restarts_s, self._counts["restarts"],
                config.max_num_env_runner_restarts,
            )  # fmt: skip
            self._failed_at[index] = time.monotonic()
        elif config.ignore_env_runner_failures:
            logger.warning(
                "%s Continuing without it (ignore_env_runner_failures=True): %d remote runner(s) left.",
                what, sum(a is not None for a in self._actors.values()),
            )  # fmt: skip
        else:
            if isinstance(error, RayTaskError) and error.cause is not None:
                raise error.cause from error
            raise error

    def healthy(self) -> list[int]:
        """Worker indices of the remote runners that can sample, after restarting those that are due
        and waiting for those that are starting (see `_await_starting`).

        When none can sample but some will be restarted, waits for the first restart; when none is
        left at all (failures ignored), or all left have not started within `sample_timeout_s`, raises.
        """
        self._restart_due_runners()
        self._await_starting()
        healthy = self.ready()
        if healthy:
            return healthy
        if self._failed_at:
            due = min(self._failed_at.values()) + self.config.delay_between_env_runner_restarts_s
            time.sleep(max(0.0, due - time.monotonic()))
            return self.healthy()
        if self._starting:
            raise EnvError(f"No remote env runner can sample: {self._late_message(sorted(self._starting))}")
        raise EnvError(
            f"All {self.config.num_env_runners} remote env runners failed and "
            "ignore_env_runner_failures=True leaves none to sample with. Fix the env, or set "
            "config.fault_tolerance(restart_failed_env_runners=True)."
        )

    def poll(self) -> list[int]:
        """`healthy()` without waiting: restarts the runners that are due, takes in those that have
        started, and returns the worker indices of the ready ones."""
        self._restart_due_runners()
        if self._starting:
            self._collect_started(timeout=0.0)
        return self.ready()

    def ready(self) -> list[int]:
        """Live remote runners that answered their first call."""
        return [i for i, actor in self._actors.items() if actor is not None and i not in self._starting]

    def _await_starting(self) -> None:
        """Waits for starting runners to answer their first call, each for at most `sample_timeout_s`
        since it was created (without a limit, logging every `_STILL_WAITING_S`); a runner past its
        limit is logged once and left out until it answers (checked here without waiting)."""
        import ray

        limit = self.config.sample_timeout_s
        while self._starting:
            self._collect_started(timeout=0.0)
            now = time.monotonic()
            young = {
                i: since for i, (_, since) in self._starting.items() if limit is None or now - since < limit
            }
            for index in set(self._starting) - set(young) - self._late:
                self._late.add(index)
                logger.warning("Leaving env runner %d out for now: %s", index, self._late_message([index]))
            if not young:
                return
            deadline = math.inf if limit is None else min(young.values()) + limit
            refs = [self._starting[i][0] for i in young]
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=min(deadline - now, _STILL_WAITING_S))
            if len(done) < len(refs) and deadline - now > _STILL_WAITING_S:
                logger.warning(
                    "Still waiting for env runner(s) %s to start (sample_timeout_s=%s).", sorted(young), limit
                )

    def _collect_started(self, timeout: float) -> None:
        """Moves the starting runners whose first call returned into service (or to `_on_failure`)."""
        import ray
        from ray.exceptions import RayError

        refs = {ref: index for index, (ref, _) in self._starting.items()}
        done, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout)
        for ref in done:
            index = refs[ref]
            try:
                ray.get(ref)
            except RayError as error:
                self._on_failure(index, error)
                continue
            del self._starting[index]
            if index in self._late:
                self._late.discard(index)
                logger.warning("Env runner %d started late and samples again.", index)
            if self._runner_state:  # runs before any later call on the actor, checked with its result
                state = self._actors[index].set_state.remote(self._runner_state)
                self._unconfirmed.setdefault(index, []).append(state)

    def _late_message(self, indices: list[int]) -> str:
        """Why runners `indices` may not have started: what they ask Ray for and what the cluster has."""
        import ray

        cpus = self.config.num_cpus_per_env_runner
        total = ray.cluster_resources().get("CPU", 0.0)
        free = ray.available_resources().get("CPU", 0.0)
        return (
            f"env runner(s) {indices} did not start within sample_timeout_s={self.config.sample_timeout_s} s. "
            f"Either Ray cannot place them (each asks for {cpus} CPU(s); the cluster has {total:g} CPU(s), "
            f"{free:g} free; e.g. a node was lost), or their constructor hangs (env creation). Fix: add nodes "
            "or free CPUs, lower config.env_runners(num_cpus_per_env_runner=...), or raise sample_timeout_s."
        )

    def _restart_due_runners(self) -> None:
        delay = self.config.delay_between_env_runner_restarts_s
        now = time.monotonic()
        for index, failed_at in list(self._failed_at.items()):
            if now - failed_at >= delay:
                del self._failed_at[index]
                self._actors[index] = self._new_actor(index)
                self._counts["restarts"] += 1
                logger.info("Restarted env runner %d (restart %d).", index, self._counts["restarts"])

    def _new_actor(self, index: int) -> Any:
        """A remote runner with worker index `index`; it gets the current weights and connector
        states once it answers its first call (`_collect_started`)."""
        import ray

        actor_class = ray.remote(num_cpus=self.config.num_cpus_per_env_runner, max_restarts=0)(RunnerActor)
        actor = actor_class.remote(
            self._runner_class, self._remote_config, index, self.config.num_env_runners
        )
        self._starting[index] = (actor.ping.remote(), time.monotonic())
        return actor


class RunnerActor:
    """Holds one env runner in a Ray actor process (made remote by `RemoteRunners._new_actor`)."""

    def __init__(
        self, runner_class: type, config: AlgorithmConfig, worker_index: int, num_workers: int
    ) -> None:
        if config.seed is not None:  # this process's generators, for the env and user code alike
            seed_process(config.seed + worker_index)
        self.runner = runner_class(config=config, worker_index=worker_index, num_workers=num_workers)

    def stop(self) -> None:
        """Stops the runner (it writes what it still buffers for `config.output`)."""
        self.runner.stop()

    def sample(self, kwargs: dict, *states: dict) -> tuple[list, dict, dict]:
        """Episodes, the metrics state and the connector states in one round trip (after setting
        `states`, e.g. new weights, in order)."""
        for state in states:
            self.runner.set_state(state)
        episodes = self.runner.sample(**kwargs)
        return episodes, self.runner.get_metrics_state(), self.get_connector_states()

    def get_connector_states(self) -> dict:
        return {name: self.runner.get_state(components=[name])[name] for name in CONNECTORS}

    def set_state(self, state: dict) -> None:
        self.runner.set_state(state)

    def reseed(self, salt: int) -> None:
        """`EnvRunner.reseed`, and this process's generators from `(seed, worker_index, salt)`."""
        seed = self.runner.config.seed
        if seed is not None:
            seed_process(derive_seed(seed, self.runner.worker_index, salt))
        self.runner.reseed(salt)

    def apply(self, func: Callable[[Any], Any]) -> Any:
        return func(self.runner)

    def ping(self) -> str:
        return self.runner.ping()


def config_for_actors(config: AlgorithmConfig) -> Any:
    """The config the remote runners get: an env name is resolved into its creator here, because
    `register_env`'s registry lives in this process only. An EnvPool id stays a name: each runner
    builds its own pool from it."""
    if not isinstance(config.env, str) or config.gym_env_vectorize_mode == "envpool":
        return config
    from flywheel.env.make import make_env_creator

    remote = config.copy()
    remote.env = make_env_creator(config.env, config.env_config)
    remote.freeze()
    return remote


def _timeout_message(index: int, timeout: float | None) -> str:
    return (
        f"Env runner {index} did not finish sample() within sample_timeout_s={timeout}. It was dropped "
        "for this iteration. Fix: a faster env, or config.env_runners(sample_timeout_s=...) higher."
    )


def _describe(error: BaseException) -> str:
    """One line (no final period) about a runner's failure: the env's own exception when a remote call
    raised one."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        error = cause
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(".")
