"""`AsyncSampler`: remote runners that never wait for the learners (IMPALA, APPO).

The driving loop (what `EnvRunnerGroup.sample_async` does with it)::

    sampler = AsyncSampler(remote_runners)
    while training:
        results = sampler.collect(block=nothing_to_learn)   # [(index, (episodes, metrics, connectors))]
        sampler.post("connectors", merged_connector_states) # (when the pipelines have state)
        sampler.launch()                                     # the finished runners sample again
        ...                                                  # learn
        sampler.post("weights", {"rl_module": weights, "weights_seq_no": n})

Every healthy remote runner always has one `sample()` in flight, but for the moment between its
result being taken (`collect`, with `ray.wait`) and its next call (`launch`). That call carries what
was posted since the runner's previous call, so a runner gets only the freshest weights, however
many were posted meanwhile, and the connector states merged with its own last ones (which clears
what it reported, so nothing it saw is merged twice). A runner that fails or outlasts `sample_timeout_s` mid-sample is handled
by `RemoteRunners` (restarted, left out or raised, as `config.fault_tolerance()` says); its in-flight
sample is dropped and counted in `num_dropped`, never returned, so nothing it sampled is counted.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from flywheel.env_runners.remote_runners import RemoteRunners


class _InFlight(NamedTuple):
    ref: Any  # the sample() call
    before: list  # calls sent to the runner before it, checked with its result
    actor: Any  # the actor it went to (a replaced actor's result is dropped)
    started: float  # time.monotonic() when it was sent


class AsyncSampler:
    """Keeps one `sample(**sample_kwargs)` in flight on every healthy runner of `runners`.

    Args:
        runners: The group's remote runners.
        sample_kwargs: Arguments of every `sample()` call (default: none, one rollout fragment).
    """

    def __init__(self, runners: RemoteRunners, sample_kwargs: dict | None = None) -> None:
        self._runners = runners
        self._kwargs = dict(sample_kwargs or {})
        self._in_flight: dict[int, _InFlight] = {}
        # part -> [version, state, its object ref once a runner needed it]
        self._posted: dict[str, list] = {}
        self._delivered: dict[int, dict[str, int]] = {}  # worker index -> part -> version it has
        self.num_dropped = 0
        """In-flight samples lost to runner failures and timeouts (lifetime)."""

    def post(self, part: str, state: dict) -> None:
        """Makes `state` (a runner state, e.g. `{"rl_module": ..., "weights_seq_no": n}`) the latest
        version of `part`; each runner sets it before its next `sample()`, restarted ones when they
        start. It goes into Ray's object store once, when the first runner needs it (a learner that
        posts after every update would otherwise copy weights no runner ever reads)."""
        self._runners.remember(state)
        version = self._posted[part][0] + 1 if part in self._posted else 1
        self._posted[part] = [version, state, None]

    def collect(self, *, block: bool) -> list[tuple[int, Any]]:
        """`(worker_index, sample result)` of every sample that finished since the last call (call
        `launch()` next). Runners without a call get one first. With `block`, waits until at least
        one finished (restarting failed runners meanwhile)."""
        while True:
            self.launch()
            results = self._take_finished(wait=block)
            if results or not block:
                return results

    @property
    def num_in_flight(self) -> int:
        return len(self._in_flight)

    def launch(self) -> None:
        """Sends `sample()` to every ready runner without one in flight. Waits (`healthy()`) only when
        no runner samples at all."""
        runners = self._runners
        ready = runners.poll()
        if not ready and not self._in_flight:
            ready = runners.healthy()
        for index in ready:
            if index in self._in_flight:
                continue
            delivered = self._delivered.get(index, {})
            stale = [
                self._state_ref(part)
                for part, posted in self._posted.items()
                if delivered.get(part) != posted[0]
            ]
            ref, before = runners.submit(index, "sample", self._kwargs, *stale)
            self._in_flight[index] = _InFlight(ref, before, runners.actor(index), time.monotonic())
            self._delivered[index] = {part: posted[0] for part, posted in self._posted.items()}

    def _state_ref(self, part: str) -> Any:
        """The object ref of `part`'s latest state (put into the object store on first use)."""
        import ray

        posted = self._posted[part]
        if posted[2] is None:
            posted[2] = ray.put(posted[1])
        return posted[2]

    def _take_finished(self, wait: bool) -> list[tuple[int, Any]]:
        """The finished samples' results (waiting for one, at most until the oldest call's
        `sample_timeout_s`, when `wait`); calls past their timeout are failed and dropped."""
        import ray

        calls = {call.ref: index for index, call in self._in_flight.items()}
        done: list = []
        if calls and wait:
            done, _ = ray.wait(list(calls), num_returns=1, timeout=self._until_first_deadline())
        if calls and (done or not wait):
            done, _ = ray.wait(list(calls), num_returns=len(calls), timeout=0)
        results = []
        for ref in done:
            index = calls[ref]
            call = self._in_flight.pop(index)
            ok, result = False, None
            if self._runners.actor(index) is call.actor:  # else: found failed (and replaced) meanwhile
                ok, result = self._runners.resolve(index, ref, call.before)
            if ok:
                results.append((index, result))
            else:
                self._drop(index)
        self._expire()
        return results

    def _until_first_deadline(self) -> float | None:
        timeout = self._runners.config.sample_timeout_s
        if timeout is None:
            return None
        first = min(call.started for call in self._in_flight.values())
        return max(0.0, first + timeout - time.monotonic())

    def _expire(self) -> None:
        timeout = self._runners.config.sample_timeout_s
        if timeout is None:
            return
        now = time.monotonic()
        for index, call in list(self._in_flight.items()):
            if now - call.started >= timeout:
                del self._in_flight[index]
                self._drop(index)
                if self._runners.actor(index) is call.actor:
                    self._runners.time_out(index)

    def _drop(self, index: int) -> None:
        """A sample that will never return: counted; the runner's next incarnation gets every part."""
        self.num_dropped += 1
        self._delivered.pop(index, None)
