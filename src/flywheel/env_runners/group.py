"""`EnvRunnerGroup`: the algorithm's runners behind one interface (a local runner plus Ray actors).

The driving loop (one training iteration)::

    episodes = group.sample(num_timesteps=n)            # in parallel, until n env steps arrived
    metrics_states = group.get_metrics_states()           # exact merge in the algorithm's logger
    group.sync_weights(weights, weights_seq_no)           # once per learner update

With `num_env_runners=0` the local runner samples and Ray is never imported. With
`num_env_runners=N > 0`, N remote runners (worker indices 1..N) sample and the local runner does
not: it stays as the holder of the inference module (`algo.get_module()`), the spaces and the
merged connector states that checkpoints save.

Failures (an env raising in a remote runner, a dead actor or node, a `sample()` slower than
`sample_timeout_s`) follow `config.fault_tolerance()`: the runner is killed and, with
`restart_failed_env_runners`, rebuilt after `delay_between_env_runner_restarts_s` with the current
weights and connector states; with `ignore_env_runner_failures` training goes on with fewer
runners; with both off the original exception is raised. What a failed runner sampled in the
failing call is dropped with its metrics, so nothing is counted twice.

A new runner (at the start, or a replacement) samples once it answered its first call. One that
has not within `sample_timeout_s` (Ray cannot place it, e.g. its node is gone and no other node
has the CPUs it asks for, or its constructor hangs) is logged and left out until it starts;
when no runner can sample at all, `sample()` raises `EnvError` naming the cause. Every failure,
timeout, restart and late start is logged (logger `flywheel.env_runners.group`).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from typing import Any

from flywheel.errors import EnvError
from flywheel.seeding import derive_seed, seed_process
from flywheel.typing import DEFAULT_MODULE_ID

logger = logging.getLogger(__name__)

_CONNECTORS = ("env_to_module_connector", "module_to_env_connector")
_STILL_WAITING_S = 60.0  # how often a wait without limit for a starting runner is logged


class EnvRunnerGroup:
    """Builds and drives the env runners of an algorithm (or of its evaluation).

    Args:
        config: The (frozen) algorithm config.
        runner_class: The runner class; defaults to `SingleAgentEnvRunner`.
    """

    def __init__(self, *, config: Any, runner_class: type | None = None) -> None:
        if runner_class is None:
            from flywheel.env_runners.single_agent import SingleAgentEnvRunner

            runner_class = SingleAgentEnvRunner
        self.config = config
        self._runner_class = runner_class
        num_remote = config.num_env_runners
        self.local_env_runner = runner_class(config=config, worker_index=0, num_workers=num_remote)
        # Remote runners by worker index; None marks a failed runner (waiting for restart, or gone).
        self._actors: dict[int, Any] = {}
        # Runners that have not answered their first call yet: (that call, when they were created).
        self._starting: dict[int, tuple[Any, float]] = {}
        self._late: set[int] = set()  # starting runners already reported as late
        self._failed_at: dict[int, float] = {}
        self._counts = {"restarts": 0, "failures": 0, "timeouts": 0}
        self._metrics_states: list[dict] = []
        self._runner_state: dict[str, Any] = {}  # what a restarted runner receives: weights, connectors
        # set_state calls sent without waiting, per runner; checked with that runner's next result.
        self._unconfirmed: dict[int, list] = {}
        if num_remote:
            ensure_ray(config)
            self._remote_config = _config_for_actors(config)
            for index in range(1, num_remote + 1):
                self._actors[index] = self._new_actor(index)

    def update_config(self, config: Any) -> None:
        """Makes `config` (e.g. after `algo.add_module`) the one runners restarted from now on get."""
        self.config = config
        if self._actors:
            self._remote_config = _config_for_actors(config)

    # ------------------------------------------------------------- sampling

    def sample(
        self, *, num_timesteps: int | None = None, num_episodes: int | None = None, **kwargs: Any
    ) -> list:
        """Episodes from every runner (`kwargs` as in `EnvRunner.sample`).

        Remote runners sample in parallel, each its share of what is still missing, in rounds
        until `num_timesteps` env steps (or `num_episodes` episodes) arrived; without either,
        each runner samples one rollout fragment. The runners' connector states are then merged
        and sent back to every runner.
        """
        if not self._actors:
            episodes = self.local_env_runner.sample(
                num_timesteps=num_timesteps, num_episodes=num_episodes, **kwargs
            )
            self._metrics_states = [self.local_env_runner.get_metrics_state()]
            return episodes
        key = "num_episodes" if num_episodes is not None else "num_timesteps"
        missing = num_episodes if num_episodes is not None else num_timesteps
        episodes, metrics_states, connector_states = [], [], []
        while True:
            indices = self._healthy_indices()
            shares = _shares(missing, len(indices), exact=key == "num_episodes")
            calls = {
                self._actors[i].sample.remote({**kwargs, key: share}): i
                for i, share in zip(indices, shares, strict=True)
                if share is None or share > 0
            }
            for _, (chunk, metrics_state, connector_state) in self._gather(calls):
                episodes.extend(chunk)
                metrics_states.append(metrics_state)
                connector_states.append(connector_state)
                if missing is not None:
                    missing -= len(chunk) if key == "num_episodes" else sum(len(e) for e in chunk)
            if missing is None or missing <= 0:
                break
        self._metrics_states = metrics_states
        self._merge_and_send_connector_states(connector_states)
        return episodes

    def _gather(self, calls: dict) -> list[tuple[int, Any]]:
        """`(worker_index, result)` of the calls that succeeded in time; failures and calls still
        running after `sample_timeout_s` go to `_on_failure`."""
        import ray

        if not calls:
            return []
        timeout = self.config.sample_timeout_s
        done, pending = ray.wait(list(calls), num_returns=len(calls), timeout=timeout)
        results = []
        for ref in done:
            index = calls[ref]
            try:
                ray.get(self._unconfirmed.pop(index, []))  # ran before `ref` on the same actor
                results.append((index, ray.get(ref)))
            except ray.exceptions.RayError as error:
                self._on_failure(index, error)
        for ref in pending:
            self._counts["timeouts"] += 1
            self._on_failure(calls[ref], TimeoutError(_timeout_message(calls[ref], timeout)))
        return results

    def get_metrics_states(self) -> list[dict]:
        """Each runner's metrics from the last `sample()`, as `MetricsLogger` states (failed runners'
        metrics are left out together with their episodes)."""
        states, self._metrics_states = self._metrics_states, []
        return states

    # -------------------------------------------------------------- syncing

    def sync_weights(self, weights: dict, weights_seq_no: int) -> None:
        """Sends the learners' inference weights `{module_id: weights}`, tagged with their sequence
        number, to every runner: put once in the object store, read by all remote runners (a
        single-agent runner takes its one module's weights)."""
        if not self.config.is_multi_agent:
            weights = weights[DEFAULT_MODULE_ID]
        state = {"rl_module": weights, "weights_seq_no": weights_seq_no}
        self.local_env_runner.set_state(state)
        if self._actors:
            import ray

            self._runner_state.update(state)
            self._broadcast(ray.put(state))

    def sync_connector_states(self, from_group: EnvRunnerGroup | None = None) -> None:
        """Merges the runners' connector states and sends the merged state to every runner.

        With `from_group`, this group's runners receive `from_group`'s merged state instead
        (evaluation runners use the training runners' observation filters).
        """
        if from_group is None:
            if self._actors:
                calls = {self._actors[i].get_connector_states.remote(): i for i in self._healthy_indices()}
                self._merge_and_send_connector_states([state for _, state in self._gather(calls)])
            return
        state = from_group.local_env_runner.get_state(components=list(_CONNECTORS))
        state.pop("weights_seq_no", None)
        self._set_connector_states(state)

    def _merge_and_send_connector_states(self, states: list[dict]) -> None:
        """Exact merge (each piece's `merge_states`) of the runners' states, then back to all runners."""
        if not any(any(state.values()) for state in states):
            return
        local = self.local_env_runner
        pipelines = {_CONNECTORS[0]: local.env_to_module, _CONNECTORS[1]: local.module_to_env}
        merged = {
            name: pipeline.merge_states([state[name] for state in states])
            for name, pipeline in pipelines.items()
        }
        self._set_connector_states(merged)

    def _set_connector_states(self, state: dict) -> None:
        self.local_env_runner.set_state(state)
        if self._actors:
            import ray

            self._runner_state.update(state)
            self._broadcast(ray.put(state))

    def _broadcast(self, state_ref: Any) -> None:
        """`set_state(state)` on every healthy remote runner, without waiting for it: an actor runs
        its calls in order, so its next `sample()` sees the state, and `_gather` raises this
        call's failure together with that result (one round trip per iteration instead of two).
        Runners still starting get the latest state when they answer (`_mark_started`)."""
        for i in self._ready_indices():
            self._unconfirmed.setdefault(i, []).append(self._actors[i].set_state.remote(state_ref))

    def reseed(self, salt: int) -> None:
        """`EnvRunner.reseed(salt)` on every runner: the next `sample()` starts new episodes, seeded
        from `(seed, worker_index, salt)`; remote runners also reseed their process's generators."""
        self.local_env_runner.reseed(salt)
        for i, actor in self._actors.items():
            if actor is not None:
                self._unconfirmed.setdefault(i, []).append(actor.reseed.remote(salt))

    # ---------------------------------------------------- fault tolerance

    def _on_failure(self, index: int, error: BaseException) -> None:
        """Kills the failed runner; raises unless it will be restarted or may be ignored."""
        import ray

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
            if isinstance(error, ray.exceptions.RayTaskError) and error.cause is not None:
                raise error.cause from error
            raise error

    def _healthy_indices(self) -> list[int]:
        """Worker indices of the remote runners that can sample, after restarting those that are due
        and waiting for those that are starting (see `_await_starting`).

        When none can sample but some will be restarted, waits for the first restart; when none is
        left at all (failures ignored), or all left have not started within `sample_timeout_s`, raises.
        """
        self._restart_due_runners()
        self._await_starting()
        healthy = self._ready_indices()
        if healthy:
            return healthy
        if self._failed_at:
            due = min(self._failed_at.values()) + self.config.delay_between_env_runner_restarts_s
            time.sleep(max(0.0, due - time.monotonic()))
            return self._healthy_indices()
        if self._starting:
            raise EnvError(f"No remote env runner can sample: {self._late_message(sorted(self._starting))}")
        raise EnvError(
            f"All {self.config.num_env_runners} remote env runners failed and "
            "ignore_env_runner_failures=True leaves none to sample with. Fix the env, or set "
            "config.fault_tolerance(restart_failed_env_runners=True)."
        )

    def _ready_indices(self) -> list[int]:
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

        refs = {ref: index for index, (ref, _) in self._starting.items()}
        done, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout)
        for ref in done:
            index = refs[ref]
            try:
                ray.get(ref)
            except ray.exceptions.RayError as error:
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

        actor_class = ray.remote(num_cpus=self.config.num_cpus_per_env_runner, max_restarts=0)(_RunnerActor)
        actor = actor_class.remote(
            self._runner_class, self._remote_config, index, self.config.num_env_runners
        )
        self._starting[index] = (actor.ping.remote(), time.monotonic())
        return actor

    def probe_health(self) -> int:
        """Pings every remote runner (within `sample_timeout_s`) and treats the silent ones as
        failed; returns the number of healthy remote runners."""
        if self._actors:
            calls = {self._actors[i].ping.remote(): i for i in self._healthy_indices()}
            self._gather(calls)
        return self.num_healthy_env_runners

    def fault_tolerance_metrics(self) -> dict[str, int]:
        """Healthy remote runners now, and lifetime counts of runner failures, restarts and timeouts."""
        return {
            "num_healthy_env_runners": self.num_healthy_env_runners,
            "num_env_runner_failures": self._counts["failures"],
            "num_env_runner_restarts": self._counts["restarts"],
            "num_env_runner_timeouts": self._counts["timeouts"],
        }

    @property
    def num_healthy_env_runners(self) -> int:
        """Live remote runners; 1 (the local runner) when there are no remote ones."""
        if not self.config.num_env_runners:
            return 1
        return len(self._ready_indices())

    @property
    def num_remote_env_runners(self) -> int:
        """Remote runners asked for (`num_env_runners`), healthy or not."""
        return len(self._actors)

    # ---------------------------------------------------------------- misc

    def foreach_env_runner(self, func: Callable[[Any], Any], local_env_runner: bool = True) -> list:
        """`[func(runner) for each runner]`: the local one first (when asked), then each healthy
        remote runner in worker-index order (`func` runs in the runner's process; its errors are
        raised here, they do not count as runner failures)."""
        results = [func(self.local_env_runner)] if local_env_runner else []
        if self._actors:
            import ray

            results.extend(ray.get([self._actors[i].apply.remote(func) for i in self._healthy_indices()]))
        return results

    def stop(self) -> None:
        """Stops the local runner and kills the remote ones."""
        self.local_env_runner.stop()
        if self._actors:
            import ray

            for actor in self._actors.values():
                if actor is not None:
                    ray.kill(actor, no_restart=True)
            self._actors = {}
            self._starting = {}


class _RunnerActor:
    """Holds one env runner in a Ray actor process (made remote by `EnvRunnerGroup._new_actor`)."""

    def __init__(self, runner_class: type, config: Any, worker_index: int, num_workers: int) -> None:
        if config.seed is not None:  # this process's generators, for the env and user code alike
            seed_process(config.seed + worker_index)
        self.runner = runner_class(config=config, worker_index=worker_index, num_workers=num_workers)

    def sample(self, kwargs: dict) -> tuple[list, dict, dict]:
        """Episodes, the metrics state and the connector states in one round trip."""
        episodes = self.runner.sample(**kwargs)
        return episodes, self.runner.get_metrics_state(), self.get_connector_states()

    def get_connector_states(self) -> dict:
        return {name: self.runner.get_state(components=[name])[name] for name in _CONNECTORS}

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


def ensure_ray(config: Any) -> None:
    """Starts Ray in this process unless it runs (or a cluster was joined with `ray.init(address=...)`).

    Ray is started with enough logical CPUs for every runner and learner the config asks for, so
    `num_env_runners=2, num_learners=2` also runs on a 2-core machine (the actors then share cores).
    """
    import ray

    if ray.is_initialized():
        return
    wanted = (
        config.num_env_runners * config.num_cpus_per_env_runner
        + config.evaluation_num_env_runners * config.num_cpus_per_env_runner
        + config.num_learners * config.num_cpus_per_learner
    )
    ray.init(
        num_cpus=max(os.cpu_count() or 1, math.ceil(wanted)), include_dashboard=False, log_to_driver=False
    )


def _config_for_actors(config: Any) -> Any:
    """The config the remote runners get: an env name is resolved into its creator here, because
    `register_env`'s registry lives in this process only."""
    if not isinstance(config.env, str):
        return config
    from flywheel.env.make import make_env_creator

    remote = config.copy()
    remote.env = make_env_creator(config.env, config.env_config)
    remote.freeze()
    return remote


def _shares(total: int | None, parts: int, *, exact: bool) -> list[int | None]:
    """Splits what is missing over `parts` runners: env steps rounded up (a runner returns at least
    its share), episodes exactly."""
    if total is None:
        return [None] * parts
    if not exact:
        return [math.ceil(total / parts)] * parts
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]


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
