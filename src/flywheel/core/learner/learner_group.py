"""`LearnerGroup`: the learners of an algorithm behind one interface (one local learner, or Ray actors).

With `num_learners=0` one learner trains in this process. With `num_learners=N > 0`, N learner
actors form a `torch.distributed` (gloo) process group: each updates on its shard of the
episodes and the gradients of every minibatch are averaged over all ranks before the optimizer
step, so all learners hold identical weights after every update (rank 0 broadcasts its initial
weights once; rank r seeds its process with `seed + r`). `update` returns the learners' results
merged into one dict.

Updates are all-or-nothing: inside `with group.atomic():` (an algorithm's training iteration; each
`update` call on its own otherwise), every learner keeps a copy of its state, and when the block
raises, the learners still alive return to it. A remote learner that dies raises
`LearnerDiedError` naming its rank; the next `update` (or `set_state`/`restore_from_path`)
restarts the group from a live learner's state (or the restored one). Reads (`get_state`,
`get_weights`) use the first live learner, so a save works while rank 0 is dead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import tree

from flywheel.checkpoints.checkpointable import Checkpointable, select
from flywheel.checkpoints.components import COMPONENT_LEARNER
from flywheel.checkpoints.tree import read_tree, tree_state
from flywheel.core.learner.learner import Learner
from flywheel.core.learner.learner_hosts import LearnerHost, RemoteLearners
from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
from flywheel.episodes.transition_episodes import TransitionEpisodes
from flywheel.errors import CheckpointError, LearnerError
from flywheel.typing import ModuleID, StateDict
from flywheel.utils.nested import num_rows

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig


class LearnerGroup(Checkpointable):
    """Builds and drives the learners; the algorithm only talks to this.

    Every call goes through `foreach_learner`, which runs a function on the local learner or on
    each remote learner (in its process).

    Args:
        config: The algorithm config; `config.learner_class` (or the algorithm's default learner
            class) is built with `config`, `module_spec` and `spaces`.
        module_spec: What the learner builds (default: from the config and `spaces`).
        spaces: `(observation_space, action_space)` of the env-to-module pipeline's output.
    """

    def __init__(
        self, *, config: AlgorithmConfig, module_spec: Any = None, spaces: tuple | None = None
    ) -> None:
        self.config = config
        self._module_spec, self._spaces = module_spec, spaces
        self._learner_class = config.learner_class or config.get_default_learner_class()
        self._local: LearnerHost | None = None
        self._remote: RemoteLearners | None = None
        self._atomic_depth = 0
        args = (self._learner_class, config, module_spec, spaces)
        if config.num_learners == 0:
            self._local = LearnerHost(*args)
        else:
            self._remote = RemoteLearners(*args)

    def _build_learner(self) -> Learner:
        """A learner built here without drawing from this process's torch generator (a save must not
        change what a seeded run samples next)."""
        import torch

        with torch.random.fork_rng(devices=[]):
            learner = self._learner_class(
                config=self.config, module_spec=self._module_spec, spaces=self._spaces
            )
            learner.build()
        return learner

    @property
    def _learner(self) -> Learner | None:
        """The local learner (None with remote learners), under RLlib's attribute name: RLlib's examples
        read it (`algo.learner_group._learner.get_optimizer(...)`)."""
        return None if self._local is None else self._local.learner

    @property
    def is_local(self) -> bool:
        """Whether the (only) learner runs in this process."""
        return self._local is not None

    @property
    def _remotes(self) -> RemoteLearners:
        assert self._remote is not None  # a group holds either a local learner or remote ones
        return self._remote

    @property
    def is_remote(self) -> bool:
        """Whether the learners are Ray actors."""
        return self._remote is not None

    def __len__(self) -> int:
        """The number of remote learners (0 with a local learner), as RLlib counts them."""
        return 0 if self._remote is None else self.config.num_learners

    def foreach_learner(self, func: Callable[[Learner], Any]) -> list:
        """`[func(learner) for each learner]` (rank order; remote learners run `func` in their process;
        raises `LearnerDiedError` when one of them died)."""
        if self._local is not None:
            return [func(self._local.learner)]
        return self._remotes.call("apply", func)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """Makes the learner updates inside the block all-or-nothing: when the block raises (a learner
        died, an exception, Ctrl-C), every live learner returns to its state from before the block
        (weights, optimizers, `weights_seq_no`, pipeline and metrics state). Blocks nest (the outer
        one counts). After a learner died, the group first restarts from a live learner's state."""
        if self._atomic_depth:
            yield
            return
        if self._remote is not None and self._remote.broken:
            self._remote.heal()
        self._hosts("snapshot")
        self._atomic_depth = 1
        try:
            yield
        except BaseException:
            self._hosts("rollback")
            raise
        finally:
            self._atomic_depth = 0
        if self._local is not None:
            self._local.forget()  # remote learners keep theirs until the next block replaces it

    def _hosts(self, method: str) -> None:
        """`snapshot` / `rollback` on the local host or on every live remote one."""
        if self._local is not None:
            getattr(self._local, method)()
        elif method == "rollback":
            self._remotes.rollback()
        else:
            self._remotes.call(method, ranks=self._remotes.live_ranks)

    def update(
        self,
        batch: dict | None = None,
        *,
        episodes: Sequence | None = None,
        data_iterators: list | None = None,
        timesteps: dict | None = None,
        num_epochs: int | None = None,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool | None = None,
    ) -> list[dict]:
        """One `Learner.update` per learner, each on its shard of `episodes` (or of `batch`'s rows, or
        on what it reads next from its own entry of `data_iterators`, one per learner);
        returns RLlib's shape: a list with each learner's results (`MetricsLogger.reduce()` output,
        plain numbers per module), which `algo.metrics.aggregate(results, key="learners")` merges
        exactly and `merge_results` into one dict. All-or-nothing (see `atomic`)."""
        kwargs = {
            "timesteps": timesteps,
            "num_epochs": num_epochs,
            "minibatch_size": minibatch_size,
            "shuffle_batch_per_epoch": shuffle_batch_per_epoch,
        }
        given = [
            name
            for name, value in (("batch", batch), ("episodes", episodes), ("data_iterators", data_iterators))
            if value is not None
        ]
        if len(given) != 1:
            raise LearnerError(
                "LearnerGroup.update() takes one of batch, episodes or data_iterators, got "
                f"{' and '.join(given) or 'none'}. "
                "Fix: pass episodes=[...] (run through the learner pipeline) or batch={module_id: columns}."
            )
        with self.atomic():
            if self._local is not None:
                return [
                    self._local.update(
                        batch=batch, episodes=episodes, data_iterators=data_iterators, **kwargs
                    )
                ]
            if data_iterators is not None:
                shards = [{"data_iterators": [iterator]} for iterator in data_iterators]
            elif episodes is not None:
                shards = [{"episodes": shard} for shard in shard_episodes(episodes, len(self))]
            else:
                assert batch is not None  # checked above
                shards = [{"batch": shard} for shard in shard_batch(batch, len(self))]
            return list(self._remotes.update(shards, kwargs))

    def add_module(
        self, *, module_id: ModuleID, module_spec: RLModuleSpec, **kwargs: Any
    ) -> MultiRLModuleSpec:
        """`Learner.add_module` (same keywords) on every learner; returns the module spec after the
        change (which checkpoints of this group rebuild from)."""
        specs = self.foreach_learner(
            lambda learner: learner.add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        )
        self._set_module_spec(specs[0])
        return specs[0]

    def remove_module(
        self, module_id: ModuleID, *, new_should_module_be_updated: Any = None
    ) -> MultiRLModuleSpec:
        """`Learner.remove_module` on every learner; returns the module spec after the change."""
        specs = self.foreach_learner(
            lambda learner: learner.remove_module(
                module_id, new_should_module_be_updated=new_should_module_be_updated
            )
        )
        self._set_module_spec(specs[0])
        return specs[0]

    def _set_module_spec(self, module_spec: MultiRLModuleSpec) -> None:
        """What this group's learners are rebuilt from (a checkpoint, a restart after a learner died)."""
        self._module_spec = module_spec
        if self._remote is not None:
            self._remote.set_module_spec(module_spec)

    def get_weights(
        self, module_ids: Collection[ModuleID] | None = None, *, inference_only: bool = False
    ) -> dict[ModuleID, dict]:
        """The (first) learner's module weights as numpy, for `module_ids` (default all);
        `inference_only=True` gives what runners receive."""
        weights = self._first(lambda learner: learner.get_weights(inference_only=inference_only))
        return weights if module_ids is None else {mid: weights[mid] for mid in module_ids}

    def set_weights(self, weights: dict[ModuleID, dict]) -> None:
        self.foreach_learner(lambda learner: learner.set_weights(weights))

    @property
    def weights_seq_no(self) -> int:
        return self._first(lambda learner: learner.weights_seq_no)

    def _first(self, func: Callable[[Learner], Any]) -> Any:
        """`func` on the local learner or on the first live rank (all ranks hold the same state)."""
        if self._local is not None:
            return func(self._local.learner)
        return self._remotes.first(func)

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        """`{"learner": learner.get_state(...)}`; `"learner/<key>"` selects inside the learner."""
        included, sub_components, sub_not_components = select("learner", components, not_components)
        if not included:
            return {}
        return {"learner": self._first(lambda learner: learner.get_state(sub_components, sub_not_components))}

    def set_state(self, state: StateDict) -> None:
        """Loads `state` into every learner (after a learner died, into a new group of learners)."""
        if "learner" in state:
            if self._remote is not None and self._remote.broken:
                self._remote.restart()
            self.foreach_learner(lambda learner: learner.set_state(state["learner"]))

    def shutdown(self) -> None:
        """Shuts the learners down and kills the remote ones."""
        if self._local is not None:
            self._local.learner.shutdown()
        if self._remote is not None:
            self._remote.stop()

    # Checkpoints.

    ctor_args_may_pickle = True

    def get_checkpointable_components(self) -> list[tuple[str, Checkpointable]]:
        """The local learner; with remote learners, a local copy holding the first live learner's
        state (built on each call) so the checkpoint layout is the same."""
        if self._local is None:
            copy = self._build_learner()
            copy.set_state(self.get_state()["learner"])
            return [(COMPONENT_LEARNER, copy)]
        return [(COMPONENT_LEARNER, self._local.learner)]

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {"config": self.config, "module_spec": self._module_spec, "spaces": self._spaces}

    def restore_from_path(self, path: str | os.PathLike, component: str | None = None) -> None:
        """Loads the checkpoint at `path` into every learner, or into the sub-component `component`
        of every learner (e.g. `"learner/rl_module/p0"`).

        Remote learners get the state read here (so the path need not exist on their node);
        the local copy `get_checkpointable_components` builds for saving would not reach them.
        """
        if self._local is not None or component is None:
            super().restore_from_path(path, component)
            return
        head, _, sub = component.partition("/")
        if head != "learner":
            raise CheckpointError(
                f"LearnerGroup has no component {component!r}: at the top level the components are "
                "['learner']. Fix: pass a path of these names."
            )
        if self._remotes.broken:
            self._remotes.heal()
        node = read_tree(path)
        kind = self.foreach_learner(
            lambda learner: (learner._component(sub) if sub else learner).checkpoint_kind()
        )
        self.check_restorable(node, kind[0], component)
        state = tree_state(node)
        self.foreach_learner(lambda learner: (learner._component(sub) if sub else learner).set_state(state))


def shard_episodes(episodes: Sequence, num_shards: int) -> Sequence[Sequence]:
    """Splits `episodes` into `num_shards` lists with near-equal env-step counts (each episode goes
    to the shard with the fewest steps so far; shards differ by at most one episode's length).

    With fewer episodes than shards, every shard gets all episodes: each learner must take part
    in every gradient exchange, and identical shards give the single-learner gradients. Replayed
    transitions split by rows (`TransitionEpisodes.split`), without building episode objects.
    """
    if isinstance(episodes, TransitionEpisodes):
        return episodes.split(num_shards)
    if len(episodes) < num_shards:
        return [list(episodes) for _ in range(num_shards)]
    shards: list[list] = [[] for _ in range(num_shards)]
    sizes = [0] * num_shards
    for episode in sorted(episodes, key=len, reverse=True):
        smallest = sizes.index(min(sizes))
        shards[smallest].append(episode)
        sizes[smallest] += len(episode)
    return shards


def shard_batch(batch: dict, num_shards: int) -> list[dict]:
    """Splits every module's rows of `batch` (`{module_id: {column: array}}`) into `num_shards`
    near-equal consecutive parts, one per learner."""
    shards: list[dict] = [{} for _ in range(num_shards)]
    for module_id, columns in batch.items():
        bounds = np.linspace(0, num_rows(columns), num_shards + 1).astype(int)
        for shard, start, stop in zip(shards, bounds[:-1], bounds[1:], strict=True):
            shard[module_id] = tree.map_structure(lambda column, a=start, b=stop: column[a:b], columns)
    return shards


def merge_results(results: list[dict]) -> dict:
    """Merges the learners' `update` results leaf by leaf: counts (keys starting with `num_`) add up,
    lists (values logged with `reduce="item_series"`, e.g. per-row TD errors) join in rank order,
    values equal on every learner (e.g. `weights_seq_no`) stay, others are averaged."""
    first = results[0]
    merged = {}
    for key, value in first.items():
        values = [result[key] for result in results if key in result]
        if isinstance(value, dict):
            merged[key] = merge_results(values)
        elif isinstance(value, list):
            merged[key] = [item for items in values for item in items]
        elif str(key).startswith("num_"):
            merged[key] = sum(values)
        elif all(v == value for v in values):
            merged[key] = value
        else:
            merged[key] = sum(values) / len(values)
    return merged
