"""Where learners live: `LearnerHost` holds one learner in one process (this one, or a Ray actor's);
`RemoteLearners` drives `num_learners` hosts as Ray actors joined into one gloo process group.

The driving loop (what `LearnerGroup` does with them)::

    hosts = RemoteLearners(learner_class, config, module_spec, spaces)
    hosts.snapshot()                            # atomic block: each learner keeps a copy of its state
    results = hosts.update(shards, kwargs)      # rank r trains on shards[r]
    hosts.rollback()                            # only when the block failed: back to the copies

Failures: a learner process that dies makes the call that reached it raise `LearnerDiedError`
naming its rank; the other ranks (whose gradient exchange broke) stay up and are rolled back by
the group. `heal()` replaces the dead learners with new ones holding a survivor's state. A call
that runs longer than `HANG_WARNING_INTERVAL_S` logs a warning once per interval that names the
ranks still busy and those that do not answer a health probe (e.g. a stopped process).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flywheel.errors import LearnerDiedError
from flywheel.ray_start import ensure_ray
from flywheel.seeding import seed_process

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.typing import RLModuleSpecType

logger = logging.getLogger(__name__)

HANG_WARNING_INTERVAL_S = 60.0
"""While a call to remote learners runs longer than this, a warning is logged once per interval."""
PROBE_TIMEOUT_S = 5.0
"""How long a hung-learner check waits for a rank to answer its health probe (at most the interval)."""
_PROBE = "probe"  # the actors' second concurrency group: health probes answer while an update runs


class LearnerHost:
    """One learner, built in this process, and the state it returns to when an atomic block fails.

    Args:
        learner_class, config, module_spec, spaces: What `learner_class(...)` is built from.
        rank: The learner's rank; a remote host seeds its process with `config.seed + rank` first.
        remote: Whether this host is a Ray actor's (it then owns its process: threads and seeds).
    """

    def __init__(
        self,
        learner_class: type,
        config: AlgorithmConfig,
        module_spec: RLModuleSpecType,
        spaces: tuple | None,
        rank: int = 0,
        remote: bool = False,
    ) -> None:
        if remote:
            import torch

            torch.set_num_threads(1)
            if config.seed is not None:  # before the module is built: its initial weights are seeded too
                seed_process(config.seed + rank)
        self.learner = learner_class(config=config, module_spec=module_spec, spaces=spaces)
        self.learner.build()
        self._saved: tuple | None = None

    def snapshot(self) -> None:
        """Keeps a copy of the learner's state (weights, optimizers, counters, pipeline, metrics)."""
        self._saved = copy.deepcopy((self.learner.get_state(), self.learner.metrics.get_state()))

    def rollback(self) -> None:
        """Returns the learner to the last snapshot (nothing happens without one)."""
        if self._saved is not None:
            state, metrics = copy.deepcopy(self._saved)
            self.learner.set_state(state)
            self.learner.metrics.set_state(metrics)

    def forget(self) -> None:
        """Drops the snapshot (its block succeeded)."""
        self._saved = None

    def update(self, **kwargs: object) -> dict:
        return self.learner.update(**kwargs)

    def apply(self, func: Callable[[Any], Any]) -> Any:
        return func(self.learner)

    # Remote hosts only.

    def free_address(self) -> str:
        """`host:port` for the process group's rendezvous, on this actor's node."""
        host = socket.gethostbyname(socket.gethostname())
        with socket.socket() as probe:
            probe.bind(("", 0))
            return f"{host}:{probe.getsockname()[1]}"

    def join(self, address: str, rank: int, world_size: int) -> str:
        """Joins the gloo process group, takes rank 0's weights and buffers; returns `pid N on HOST`
        (what warnings about this rank name)."""
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method=f"tcp://{address}", rank=rank, world_size=world_size)
        with torch.no_grad():
            for tensor in self.learner.module.state_dict().values():
                dist.broadcast(tensor, src=0)
        return f"pid {os.getpid()} on {socket.gethostname()}"

    def ping(self) -> str:
        return "pong"


class RemoteLearners:
    """`config.num_learners` `LearnerHost` actors, rank `r` at index `r`; every call waits through
    `_wait` (hang warnings) and turns dead actors into `LearnerDiedError`."""

    def __init__(
        self,
        learner_class: type,
        config: AlgorithmConfig,
        module_spec: RLModuleSpecType,
        spaces: tuple | None,
    ) -> None:
        self.config = config
        self._host_args = (learner_class, config, module_spec, spaces)
        self._actors: list[Any] = []
        self._where: dict[int, str] = {}  # rank -> `pid N on HOST`
        self._dead: dict[int, str] = {}  # rank -> what it died in and why
        self._start()

    def _start(self) -> None:
        """Starts the actors (rank r seeded with seed + r) and joins them into one process group."""
        import ray

        ensure_ray(self.config)
        # Ray's typed overloads of `ray.remote(**options)` omit the actor option `concurrency_groups`.
        actor_class = ray.remote(  # pyright: ignore[reportCallIssue]
            num_cpus=self.config.num_cpus_per_learner,
            num_gpus=self.config.num_gpus_per_learner,
            max_restarts=0,
            concurrency_groups={_PROBE: 1},
        )(LearnerHost)
        num = self.config.num_learners
        self._actors = [actor_class.remote(*self._host_args, rank, True) for rank in range(num)]
        self._dead, self._where = {}, {}
        (address,) = self._results("start", {0: self._actors[0].free_address.remote()})
        calls = {rank: actor.join.remote(address, rank, num) for rank, actor in enumerate(self._actors)}
        self._where = dict(enumerate(self._results("start", calls)))

    @property
    def live_ranks(self) -> list[int]:
        return [rank for rank in range(len(self._actors)) if rank not in self._dead]

    @property
    def broken(self) -> bool:
        """Whether a rank died (the others cannot exchange gradients until `heal` or `restart`)."""
        return bool(self._dead)

    # Calls.

    def call(self, method: str, *args: object, ranks: list[int] | None = None, **kwargs: object) -> list:
        """`method(*args, **kwargs)` on each rank in `ranks` (default: all, none of them dead)."""
        if ranks is None:
            self.check_alive()
            ranks = list(range(len(self._actors)))
        return self._results(
            method, {r: getattr(self._actors[r], method).remote(*args, **kwargs) for r in ranks}
        )

    def update(self, shards: list[dict], kwargs: dict) -> list[dict]:
        """Rank r's `Learner.update(**shards[r], **kwargs)` result (`shards[r]` holds its `episodes` or
        `batch`), for every rank."""
        self.check_alive()
        calls = {
            rank: actor.update.remote(**shard, **kwargs)
            for rank, (actor, shard) in enumerate(zip(self._actors, shards, strict=True))
        }
        return self._results("update", calls)

    def first(self, func: Callable[[Any], Any]) -> Any:
        """`func(learner)` on the first live rank (all ranks hold the same state); a rank found dead
        is skipped. Raises `LearnerDiedError` when none is alive."""
        for rank in self.live_ranks:
            try:
                return self.call("apply", func, ranks=[rank])[0]
            except LearnerDiedError:
                continue
        raise LearnerDiedError(
            f"{self._deaths()}. No learner is alive, so there is no learner state to read or save. Fix: "
            "restore the last checkpoint: algo.restore_from_path(path) (it restarts the learners) or "
            "Algorithm.from_checkpoint(path).",
            ranks=sorted(self._dead),
        )

    def rollback(self) -> None:
        """Every live rank returns to its snapshot (a rank that dies meanwhile is recorded)."""
        with contextlib.suppress(LearnerDiedError):  # recorded; the caller raises the original error
            self.call("rollback", ranks=self.live_ranks)

    def heal(self) -> None:
        """Replaces the whole group with new actors holding a live rank's state (the surviving ranks'
        process group lost a member, so they cannot exchange gradients any more)."""
        state = self.first(lambda learner: learner.get_state())
        self.restart()
        self.call("apply", lambda learner: learner.set_state(state))

    def set_module_spec(self, module_spec: RLModuleSpecType) -> None:
        """The module spec learners started from now on are built with (after modules were added or
        removed at run time)."""
        learner_class, config, _, spaces = self._host_args
        self._host_args = (learner_class, config, module_spec, spaces)

    def restart(self) -> None:
        """Kills every actor and starts a new group (fresh learners, seeded as at the start)."""
        logger.warning(
            "Restarting all %d learners (rank(s) %s had died).", len(self._actors), sorted(self._dead)
        )
        self.stop()
        self._start()

    def check_alive(self) -> None:
        """Raises `LearnerDiedError` if a rank died in an earlier call."""
        if self._dead:
            raise self._died_error()

    def stop(self) -> None:
        import ray

        for actor in self._actors:
            ray.kill(actor, no_restart=True)
        self._actors = []

    # Waiting, failures and hangs.

    def _results(self, what: str, calls: dict[int, Any]) -> list:
        """The calls' results in rank order. A rank whose actor died is recorded and raised as
        `LearnerDiedError` (after every call finished); an exception a learner raised is re-raised
        as it was raised in the learner (the first rank's)."""
        from ray.exceptions import RayActorError, RayError

        outcomes = self._wait(what, calls)
        died = {r: e for r, e in outcomes.items() if isinstance(e, RayActorError)}
        if died and what == "start":  # e.g. the learner's constructor raised: Ray's error shows it
            raise died[min(died)]
        for rank, error in died.items():
            self._dead.setdefault(rank, f"died during {what}: {str(error).splitlines()[0]}")
        if died:
            raise self._died_error() from died[min(died)]
        failed = {r: e for r, e in outcomes.items() if isinstance(e, RayError)}
        if failed:
            error = failed[min(failed)]
            cause = getattr(error, "cause", None)
            raise (cause if isinstance(cause, BaseException) else error) from error
        return [outcomes[rank] for rank in sorted(outcomes)]

    def _wait(self, what: str, calls: dict[int, Any]) -> dict[int, Any]:
        """Each rank's result, or the `RayError` its call raised; warns while calls are pending."""
        import ray
        from ray.exceptions import RayError

        outcomes: dict[int, Any] = {}
        pending = dict(calls)
        start = time.monotonic()
        while pending:
            refs = list(pending.values())
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=HANG_WARNING_INTERVAL_S)
            for rank, ref in list(pending.items()):
                if ref in done:
                    del pending[rank]
                    try:
                        outcomes[rank] = ray.get(ref)
                    except RayError as error:
                        outcomes[rank] = error
            if pending:
                self._warn_hang(what, sorted(pending), time.monotonic() - start)
        return outcomes

    def _warn_hang(self, what: str, busy: list[int], elapsed: float) -> None:
        """Logs which of the `busy` ranks answer a health probe (working, or waiting for the others
        in a gradient exchange) and which do not (stopped, hung or overloaded)."""
        import ray

        if what == "start":  # a starting actor cannot answer probes yet
            config = self.config
            logger.warning(
                "Learner rank(s) %s have not started after %.0f s. Either Ray cannot place them yet (each "
                "asks for %g CPU(s) and %g GPU(s); the cluster has %s free), or building the learner hangs. "
                "Training waits for them. Fix: add nodes or free resources, or lower "
                "config.learners(num_cpus_per_learner=..., num_gpus_per_learner=...).",
                busy, elapsed, config.num_cpus_per_learner, config.num_gpus_per_learner,
                {k: v for k, v in ray.available_resources().items() if k in ("CPU", "GPU")},
            )  # fmt: skip
            return
        probes = {rank: self._actors[rank].ping.options(concurrency_group=_PROBE).remote() for rank in busy}
        timeout = min(PROBE_TIMEOUT_S, HANG_WARNING_INTERVAL_S)
        answered, _ = ray.wait(list(probes.values()), num_returns=len(probes), timeout=timeout)
        silent = [rank for rank, ref in probes.items() if ref not in answered]
        working = [rank for rank in busy if rank not in silent]
        lines = [f"Learner {what} still running after {elapsed:.0f} s."]
        if silent:
            ranks = ", ".join(f"learner rank {rank} ({self._where[rank]})" for rank in silent)
            lines.append(
                f"Not answering a health probe within {timeout:g} s (stopped, hung or overloaded): {ranks}."
            )
        if working:
            ranks = ", ".join(f"learner rank {rank}" for rank in working)
            lines.append(
                f"Alive and still in the call (each rank waits for every other one in a gradient exchange): {ranks}."
            )
        lines.append(
            "Training waits for them. Fix: resume or kill the stuck process (a killed learner makes "
            "train() raise LearnerDiedError), or look for the cause in its Ray worker log."
        )
        logger.warning(" ".join(lines))

    def _deaths(self) -> str:
        return "; ".join(
            f"Learner rank {rank} ({self._where.get(rank, 'starting')}) {why}"
            for rank, why in sorted(self._dead.items())
        )

    def _died_error(self) -> LearnerDiedError:
        return LearnerDiedError(
            f"{self._deaths()}. Learners train together (they exchange gradients every minibatch), so the "
            "others cannot update without it. An algorithm leaves its counters and the live learners as "
            "they were after its last completed iteration, so algo.save_to_path() stores that consistent "
            "state. Fix: call algo.train() again (the learners restart from a live one's state), or restore "
            "the last checkpoint: algo.restore_from_path(path) (it restarts the learners) or "
            "Algorithm.from_checkpoint(path).",
            ranks=sorted(self._dead),
        )
