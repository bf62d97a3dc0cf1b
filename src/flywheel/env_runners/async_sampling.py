"""`AsyncSampler`: remote runners that never wait for the learners (IMPALA, APPO).

The driving loop (what `EnvRunnerGroup.sample_async` does with it)::

    sampler = AsyncSampler(remote_runners)
    while training:
        results = sampler.collect(block=nothing_to_learn)   # [(index, (episodes, metrics, connectors))]
        sampler.post("connectors", merged_connector_states, every_call=True)  # (stateful pipelines)
        sampler.launch()                                     # the finished runners sample again
        ...                                                  # learn
        sampler.post("weights", {"rl_module": weights, "weights_seq_no": n})

Every healthy remote runner always has `max_requests_in_flight_per_env_runner` `sample()` calls in
flight (the actor runs them in order), but for the moment between a result being taken (`collect`,
with `ray.wait`) and the next call (`launch`). A call carries the weights posted since the runner's
previous call, so a runner gets only the freshest weights, however many were posted meanwhile (a
queued call samples with the weights the runner has when it starts: each step records their
`weights_seq_no`), and the latest merged connector states, every call (setting them clears what the
runner reported, so each call reports only what it saw and nothing is merged twice). A runner that
fails or outlasts `sample_timeout_s` mid-sample (a queued call's clock starts when the one ahead of it
returned) is handled by `RemoteRunners` (restarted, left out or raised, as `config.fault_tolerance()`
says); all its calls in flight are dropped and each is counted in `num_dropped`, never returned, so
nothing they sampled is counted.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from flywheel.env_runners.remote_runners import RemoteRunners


@dataclasses.dataclass(eq=False)  # compared by identity: a call is the one object in its queue
class _InFlight:
    ref: Any  # the sample() call
    before: list  # calls sent to the runner before it, checked with its result
    actor: Any  # the actor it went to (a replaced actor's result is dropped)
    started: float  # time.monotonic() when it was sent, or when the call ahead of it returned


@dataclasses.dataclass
class _Posted:
    version: int
    state: dict
    every_call: bool  # sent with every call, not only with a runner's first one after it changed
    ref: Any = None  # its object ref, once a runner needed it


class AsyncSampler:
    """Keeps `config.max_requests_in_flight_per_env_runner` `sample(**sample_kwargs)` calls in flight
    on every healthy runner of `runners`.

    Args:
        runners: The group's remote runners.
        sample_kwargs: Arguments of every `sample()` call (default: none, one rollout fragment).
    """

    def __init__(self, runners: RemoteRunners, sample_kwargs: dict | None = None) -> None:
        self._runners = runners
        self._kwargs = dict(sample_kwargs or {})
        self._in_flight: dict[int, list[_InFlight]] = {}  # worker index -> its calls, oldest first
        self._posted: dict[str, _Posted] = {}
        self._delivered: dict[int, dict[str, int]] = {}  # worker index -> part -> version it has
        self.num_dropped = 0
        """In-flight samples lost to runner failures and timeouts (lifetime)."""

    def post(self, part: str, state: dict, *, every_call: bool = False) -> None:
        """Makes `state` (a runner state, e.g. `{"rl_module": ..., "weights_seq_no": n}`) the latest
        version of `part`; each runner sets it before its next `sample()` (with `every_call`, before
        each of its next ones), restarted ones when they start. It goes into Ray's object store once,
        when the first runner needs it (a learner that posts after every update would otherwise copy
        weights no runner ever reads)."""
        self._runners.remember(state)
        version = self._posted[part].version + 1 if part in self._posted else 1
        self._posted[part] = _Posted(version, state, every_call)

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
        return sum(len(calls) for calls in self._in_flight.values())

    def launch(self) -> None:
        """Sends `sample()` to every ready runner until it has `max_requests_in_flight_per_env_runner`
        calls in flight. Waits (`healthy()`) only when no runner samples at all."""
        runners = self._runners
        ready = runners.poll()
        if not ready and not self.num_in_flight:
            ready = runners.healthy()
        for index in ready:
            calls = self._in_flight.setdefault(index, [])
            while len(calls) < runners.config.max_requests_in_flight_per_env_runner:
                delivered = self._delivered.get(index, {})
                states = [
                    self._state_ref(part)
                    for part, posted in self._posted.items()
                    if posted.every_call or delivered.get(part) != posted.version
                ]
                ref, before = runners.submit(index, "sample", self._kwargs, *states)
                calls.append(_InFlight(ref, before, runners.actor(index), time.monotonic()))
                self._delivered[index] = {part: posted.version for part, posted in self._posted.items()}

    def _state_ref(self, part: str) -> Any:
        """The object ref of `part`'s latest state (put into the object store on first use)."""
        import ray

        posted = self._posted[part]
        if posted.ref is None:
            posted.ref = ray.put(posted.state)
        return posted.ref

    def _take_finished(self, wait: bool) -> list[tuple[int, Any]]:
        """The finished samples' results (waiting for one, at most until the oldest call's
        `sample_timeout_s`, when `wait`); calls past their timeout are failed and dropped."""
        import ray

        calls = {call.ref: (index, call) for index, queue in self._in_flight.items() for call in queue}
        done: list = []
        if calls and wait:
            done, _ = ray.wait(list(calls), num_returns=1, timeout=self._until_first_deadline())
        if calls and (done or not wait):
            done, _ = ray.wait(list(calls), num_returns=len(calls), timeout=0)
        results = []
        for ref in done:  # in the order of `calls`: each runner's oldest first
            index, call = calls[ref]
            queue = self._in_flight.get(index, [])
            if call not in queue:  # dropped with an earlier call of its runner
                continue
            ok, result = False, None
            if self._runners.actor(index) is call.actor:  # else: found failed (and replaced) meanwhile
                ok, result = self._runners.resolve(index, ref, call.before)
            if not ok:
                self._drop(index, call.actor)
                continue
            results.append((index, result))
            was_running = queue[0] is call
            queue.remove(call)
            if queue and was_running:  # the next call runs now: its sample_timeout_s counts from here
                queue[0].started = time.monotonic()
        self._expire()
        return results

    def _until_first_deadline(self) -> float | None:
        timeout = self._runners.config.sample_timeout_s
        if timeout is None:
            return None
        first = min(queue[0].started for queue in self._in_flight.values() if queue)
        return max(0.0, first + timeout - time.monotonic())

    def _expire(self) -> None:
        timeout = self._runners.config.sample_timeout_s
        if timeout is None:
            return
        now = time.monotonic()
        for index, queue in list(self._in_flight.items()):
            if queue and now - queue[0].started >= timeout:
                actor = queue[0].actor
                self._drop(index, actor)
                if self._runners.actor(index) is actor:
                    self._runners.time_out(index)

    def _drop(self, index: int, actor: Any) -> None:
        """The calls runner `index` has in flight on `actor` (failed) never return: each is counted;
        the runner's next incarnation gets every part."""
        queue = self._in_flight.get(index, [])
        self.num_dropped += sum(call.actor is actor for call in queue)
        queue[:] = [call for call in queue if call.actor is not actor]
        self._delivered.pop(index, None)
