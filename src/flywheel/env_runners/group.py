"""`EnvRunnerGroup`: the algorithm's runners behind one interface (a local runner plus Ray actors).

The driving loop (one training iteration)::

    episodes = group.sample(num_timesteps=n)            # in parallel, until n env steps arrived
    metrics_states = group.get_metrics_states()           # exact merge in the algorithm's logger
    group.sync_weights(weights, weights_seq_no)           # once per learner update

With `num_env_runners=0` the local runner samples and Ray is never imported. With
`num_env_runners=N > 0`, N remote runners (worker indices 1..N, `RemoteRunners`) sample and the
local runner does not: it stays as the holder of the inference module (`algo.get_module()`), the
spaces and the merged connector states that checkpoints save. Remote runners that fail, time out
or cannot be placed are handled (and logged) as `RemoteRunners` describes; what a failed runner
sampled in the failing call is dropped with its metrics, so nothing is counted twice.

Asynchronous algorithms (IMPALA, APPO) call `sample_async` instead: every remote runner always has
`max_requests_in_flight_per_env_runner` `sample()` calls in flight (`AsyncSampler`), finished ones
are taken as they arrive, and the weights (and merged connector states) reach each runner with its
next `sample()` call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from flywheel.env_runners.async_sampling import AsyncSampler
from flywheel.env_runners.env_runner import EnvRunner
from flywheel.env_runners.remote_runners import CONNECTORS, RemoteRunners
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig


class EnvRunnerGroup:
    """Builds and drives the env runners of an algorithm (or of its evaluation).

    Args:
        config: The (frozen) algorithm config.
        runner_class: The runner class; defaults to `SingleAgentEnvRunner`.
    """

    def __init__(self, *, config: AlgorithmConfig, runner_class: type | None = None) -> None:
        if runner_class is None:
            from flywheel.env_runners.single_agent import SingleAgentEnvRunner

            runner_class = SingleAgentEnvRunner
        self.config = config
        num_remote = config.num_env_runners
        self.local_env_runner = runner_class(config=config, worker_index=0, num_workers=num_remote)
        self._remote = RemoteRunners(config, runner_class) if num_remote else None
        self._async: AsyncSampler | None = None  # set by the first sample_async()
        self._metrics_states: list[dict] = []
        self._num_dropped = 0  # samples of synchronous rounds lost to runner failures

    def update_config(self, config: AlgorithmConfig) -> None:
        """Makes `config` (e.g. after `algo.add_module`) the one runners restarted from now on get."""
        self.config = config
        if self._remote is not None:
            self._remote.update_config(config)

    # ------------------------------------------------------------- sampling

    def sample(
        self, *, num_timesteps: int | None = None, num_episodes: int | None = None, **kwargs: object
    ) -> list:
        """Episodes from every runner (`kwargs` as in `EnvRunner.sample`).

        Remote runners sample in parallel, each its share of what is still missing, in rounds
        until `num_timesteps` env steps (or `num_episodes` episodes) arrived; without either,
        each runner samples one rollout fragment. The runners' connector states are then merged
        and sent back to every runner. `force_reset` resets the envs in the first round only.
        """
        if self._remote is None:
            episodes = self.local_env_runner.sample(
                num_timesteps=num_timesteps, num_episodes=num_episodes, **kwargs
            )
            self._metrics_states = [self.local_env_runner.get_metrics_state()]
            return episodes
        if self._async is not None:  # in-flight asynchronous samples are dropped (not waited for)
            self._num_dropped += self._async.num_in_flight + self._async.num_dropped
            self._async = None
        key = "num_episodes" if num_episodes is not None else "num_timesteps"
        missing = num_episodes if num_episodes is not None else num_timesteps
        episodes, metrics_states, connector_states = [], [], []
        while True:
            indices = self._remote.healthy()
            shares = _shares(missing, len(indices), exact=key == "num_episodes")
            args = {
                i: ({**kwargs, key: share},)
                for i, share in zip(indices, shares, strict=True)
                if share is None or share > 0
            }
            calls = self._remote.call("sample", args)
            results = self._remote.gather(calls)
            self._num_dropped += len(calls) - len(results)
            kwargs.pop("force_reset", None)  # later rounds continue the episodes of the first
            for _, (chunk, metrics_state, connector_state) in results:
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

    def sample_async(self, *, block: bool = True) -> list[list]:
        """Asynchronous sampling: the episodes of every remote `sample()` call (one rollout fragment
        each) that finished since the last call, one list per call; those runners have their next
        calls in flight already. With `block`, waits until at least one finished. Their metrics
        states come from `get_metrics_states()`; their connector states are merged into the local
        runner's and go to every runner with its next call. Without remote runners: one `sample()`
        of the local runner.
        """
        if self._remote is None:
            return [self.sample()]
        if self._async is None:
            self._async = AsyncSampler(self._remote)
            merged = self.local_env_runner.get_state(components=list(CONNECTORS))
            merged.pop("weights_seq_no", None)
            if any(merged.values()):  # with the first calls too (see `_set_state`)
                self._set_state(merged, "connectors")
        results = self._async.collect(block=block)
        self._metrics_states.extend(metrics_state for _, (_, metrics_state, _) in results)
        self._merge_and_send_connector_states([connectors for _, (_, _, connectors) in results])
        self._async.launch()
        return [episodes for _, (episodes, _, _) in results]

    def get_metrics_states(self) -> list[dict]:
        """Each runner's metrics from the last `sample()`, as `MetricsLogger` states (failed runners'
        metrics are left out together with their episodes)."""
        states, self._metrics_states = self._metrics_states, []
        return states

    # -------------------------------------------------------------- syncing

    def sync_weights(
        self,
        weights: dict | None = None,
        weights_seq_no: int = 0,
        *,
        from_worker_or_learner_group: Any = None,
        policies: Collection[str] | None = None,
        inference_only: bool = False,
        **ignored: Any,
    ) -> None:
        """Sends the learners' inference weights `{module_id: weights}`, tagged with their sequence
        number, to every runner: put once in the object store, read by all remote runners (a
        single-agent runner takes its one module's weights).

        RLlib's form, `sync_weights(from_worker_or_learner_group=algo.learner_group,
        inference_only=True, policies=[...])`, reads the weights and their sequence number from
        that learner group (or env runner; with neither, the local runner's weights go to the
        remote runners) instead. RLlib's `to_worker_indices`, `global_vars` and
        `timeout_seconds` are accepted and change nothing: every healthy runner gets the weights.
        """
        source = from_worker_or_learner_group
        if source is None and weights is None:  # RLlib: the local runner's weights go to the remote ones
            source = self.local_env_runner
        if isinstance(source, EnvRunner):
            self._set_state(source.get_state(components=["rl_module"]))
            return
        if source is not None:
            weights = source.get_weights(policies, inference_only=inference_only)
            weights_seq_no = source.weights_seq_no
        assert weights is not None  # given, or read from the source above
        if not self.config.is_multi_agent:
            weights = weights[DEFAULT_MODULE_ID]
        # While sampling asynchronously, weights go with each runner's next sample() (forced ones,
        # seq no 0, right away: a later newer-numbered state must not overtake them).
        part = "weights" if weights_seq_no else None
        self._set_state({"rl_module": weights, "weights_seq_no": weights_seq_no}, part)

    def sync_connector_states(self, from_group: EnvRunnerGroup | None = None) -> None:
        """Merges the runners' connector states and sends the merged state to every runner.

        With `from_group`, this group's runners receive `from_group`'s merged state instead
        (evaluation runners use the training runners' observation filters).
        """
        if from_group is None:
            if self._remote is not None:
                calls = self._remote.call("get_connector_states", dict.fromkeys(self._remote.healthy(), ()))
                self._merge_and_send_connector_states([state for _, state in self._remote.gather(calls)])
            return
        state = from_group.local_env_runner.get_state(components=list(CONNECTORS))
        state.pop("weights_seq_no", None)
        self._set_state(state)

    def _merge_and_send_connector_states(self, states: list[dict]) -> None:
        """Exact merge (each piece's `merge_states`) of the runners' states into the local runner's
        (which holds every earlier merge), then back to all runners."""
        if not any(any(state.values()) for state in states):
            return
        local = self.local_env_runner
        pipelines = {CONNECTORS[0]: local.env_to_module, CONNECTORS[1]: local.module_to_env}
        merged = {
            name: pipeline.merge_states([pipeline.get_state()] + [state[name] for state in states])
            for name, pipeline in pipelines.items()
        }
        self._set_state(merged, "connectors")

    def _set_state(self, state: dict, part: str | None = None) -> None:
        """`set_state` on every runner: right away, or, while sampling asynchronously, as `part` of
        what goes with each remote runner's next `sample()`."""
        self.local_env_runner.set_state(state)
        if self._remote is None:
            return
        if self._async is not None and part is not None:
            # Merged connector states go with every call: setting them clears what the runner
            # reported, so a call queued behind another does not report that one's data again.
            self._async.post(part, state, every_call=part == "connectors")
        else:
            self._remote.broadcast(state)

    def reseed(self, salt: int) -> None:
        """`EnvRunner.reseed(salt)` on every runner: the next `sample()` starts new episodes, seeded
        from `(seed, worker_index, salt)`; remote runners also reseed their process's generators."""
        self.local_env_runner.reseed(salt)
        if self._remote is not None:
            self._remote.reseed(salt)

    # ---------------------------------------------------- fault tolerance

    def probe_health(self) -> int:
        """Pings every remote runner (within `sample_timeout_s`) and treats the silent ones as
        failed; returns the number of healthy remote runners."""
        if self._remote is not None:
            self._remote.gather(self._remote.call("ping", dict.fromkeys(self._remote.healthy(), ())))
        return self.num_healthy_env_runners

    def fault_tolerance_metrics(self) -> dict[str, int]:
        """Healthy remote runners now, and lifetime counts of runner failures, restarts, timeouts and
        of the `sample()` calls whose results were lost with them."""
        counts = (
            self._remote.counts()
            if self._remote is not None
            else dict.fromkeys(("failures", "restarts", "timeouts"), 0)
        )
        dropped = self._num_dropped + (self._async.num_dropped if self._async is not None else 0)
        return {
            "num_healthy_env_runners": self.num_healthy_env_runners,
            "num_env_runner_failures": counts["failures"],
            "num_env_runner_restarts": counts["restarts"],
            "num_env_runner_timeouts": counts["timeouts"],
            "num_env_runner_samples_dropped": dropped,
        }

    @property
    def num_healthy_env_runners(self) -> int:
        """Remote runners that answered and live; 1 (the local runner) when there are no remote ones."""
        if self._remote is None:
            return 1
        return len(self._remote.ready())

    def num_remote_env_runners(self) -> int:
        """Remote runners asked for (`num_env_runners`), healthy or not (a method, as RLlib's)."""
        return 0 if self._remote is None else len(self._remote)

    def num_remote_workers(self) -> int:
        """RLlib's other name of `num_remote_env_runners()` (its own examples call this one)."""
        return self.num_remote_env_runners()

    # ---------------------------------------------------------------- misc

    def foreach_env_runner(self, func: Callable[[Any], Any], local_env_runner: bool = True) -> list:
        """`[func(runner) for each runner]`: the local one first (when asked), then each healthy
        remote runner in worker-index order (`func` runs in the runner's process; its errors are
        raised here, they do not count as runner failures)."""
        results = [func(self.local_env_runner)] if local_env_runner else []
        if self._remote is not None:
            results.extend(self._remote.apply(func))
        return results

    def stop(self) -> None:
        """Stops the local runner and kills the remote ones."""
        self.local_env_runner.stop()
        if self._remote is not None:
            self._remote.stop()


def _shares(total: int | None, parts: int, *, exact: bool) -> list[int | None]:
    """Splits what is missing over `parts` runners: env steps rounded up (a runner returns at least
    its share), episodes exactly."""
    if total is None:
        return [None] * parts
    if not exact:
        return [math.ceil(total / parts)] * parts
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]
