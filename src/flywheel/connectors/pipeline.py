"""`ConnectorPipelineV2`: an ordered list of connector pieces that acts as one piece."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self

import gymnasium as gym

from flywheel.checkpoints.checkpointable import select
from flywheel.connectors.connector import ConnectorV2
from flywheel.errors import ConnectorError
from flywheel.typing import StateDict

if TYPE_CHECKING:
    from flywheel.checkpoints.registry import Allowed
    from flywheel.checkpoints.tree import Node
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType

PieceRef = str | type | int


class ConnectorPipelineV2(ConnectorV2):
    """Calls its pieces in order, each on the batch the previous one returned.

    Each piece's input spaces are the previous piece's output spaces (the first piece gets the
    pipeline's input spaces); they are recomputed after every structural change, and the pipeline's
    output spaces are the last piece's.
    """

    _checkpoint_kind = "ConnectorPipelineV2"  # a piece's checkpoint does not restore into a pipeline
    # (module, pieces, pieces to call, pieces to call on an empty batch): see _work_out_calls
    _calls_for: tuple[Any, list[ConnectorV2], list[ConnectorV2], list[ConnectorV2]] | None = None

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        connectors: Iterable[ConnectorV2] | None = None,
        **kwargs: object,
    ):
        self.connectors: list[ConnectorV2] = list(connectors or [])
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def __call__(
        self,
        *,
        rl_module: RLModule | MultiRLModule,
        batch: dict[str, Any],
        episodes: Sequence[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        cached = self._calls(rl_module)
        # A call that begins with an empty batch (a runner's). A module may return something else
        # than a dict: GetActions names the fix.
        for piece in cached[3] if isinstance(batch, dict) and not batch else cached[2]:
            # `piece.__call__(...)` is what `piece(...)` runs, but a call of the instance packs the
            # keywords into a dict first (CPython's `slot_tp_call`) where the bound method passes
            # them straight on: ~2.5k instructions less a piece, five pieces a runner's step.
            # (Runners pass no extra keywords: a call without `**{}` is 3x cheaper, ~0.2 us a piece.)
            out = (
                piece.__call__(
                    rl_module=rl_module, batch=batch, episodes=episodes, explore=explore,
                    shared_data=shared_data, metrics=metrics, **kwargs,
                )
                if kwargs
                else piece.__call__(
                    rl_module=rl_module, batch=batch, episodes=episodes, explore=explore,
                    shared_data=shared_data, metrics=metrics,
                )
            )  # fmt: skip
            if out is None:
                raise ConnectorError(
                    f"Connector piece {piece.name} returned None, expected the batch (a dict). "
                    f"End its __call__ with `return batch`."
                )
            batch = out
        return batch

    def builds_only_batches(self, rl_module: RLModule | MultiRLModule) -> bool:
        """Whether every piece this pipeline calls for `rl_module` only builds the batch it returns
        (`ConnectorV2.only_builds_batch`): a call whose batch is discarded then changes nothing."""
        return all(piece.only_builds_batch for piece in self._calls(rl_module)[2])

    def _calls(
        self, rl_module: RLModule | MultiRLModule
    ) -> tuple[Any, list[ConnectorV2], list[ConnectorV2], list[ConnectorV2]]:
        """`_calls_for`, worked out again when the module or the pieces changed."""
        cached = self._calls_for
        if cached is None or cached[0] is not rl_module or cached[1] != self.connectors:
            cached = self._work_out_calls(rl_module)
        return cached

    def _work_out_calls(
        self, rl_module: RLModule | MultiRLModule
    ) -> tuple[Any, list[ConnectorV2], list[ConnectorV2], list[ConnectorV2]]:
        """Caches and returns `_calls_for`: the pieces, without those that are no-ops for `rl_module`
        (`ConnectorV2.is_noop_for`) and, for a call that begins with an empty batch (a runner's),
        those that are no-ops after the pieces before them (`ConnectorV2.is_noop_after`). Runners call
        a pipeline every step with the same module: each call of a piece that does nothing costs a
        microsecond or two there (1-env CartPole sampling a few percent faster with the two default
        state/time-axis pieces skipped for a stateless module, and ~1.5 us a step less with
        `BatchIndividualItems` skipped after `AddObservationsFromEpisodesToBatch`). Worked out again
        when the module or the pieces change (`connectors` is a public list, so it is compared, not
        trusted)."""
        calls = [piece for piece in self.connectors if not piece.is_noop_for(rl_module)]
        on_empty: list[ConnectorV2] = []
        for piece in calls:
            if not piece.is_noop_after(on_empty):
                on_empty.append(piece)
        self._calls_for = (rl_module, list(self.connectors), calls, on_empty)
        return self._calls_for

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_calls_for"] = None  # (holds the module it was worked out for)
        return state

    @property
    def required_episode_lookback(self) -> int:
        """The most history any of the pieces reads (see `ConnectorV2.required_episode_lookback`)."""
        return max((piece.required_episode_lookback for piece in self.connectors), default=0)

    # Structure.

    def append(self, connector: ConnectorV2) -> None:
        """Adds `connector` at the end."""
        self.connectors.append(connector)
        self._update_output_spaces()

    def prepend(self, connector: ConnectorV2) -> None:
        """Adds `connector` at the start."""
        self.connectors.insert(0, connector)
        self._update_output_spaces()

    def insert_before(self, name_or_class: str | type, connector: ConnectorV2) -> ConnectorV2:
        """Inserts `connector` before the first piece with that name (or of that class); returns it."""
        self.connectors.insert(self._index_of(name_or_class), connector)
        self._update_output_spaces()
        return connector

    def insert_after(self, name_or_class: str | type, connector: ConnectorV2) -> ConnectorV2:
        """Inserts `connector` after the first piece with that name (or of that class); returns it."""
        self.connectors.insert(self._index_of(name_or_class) + 1, connector)
        self._update_output_spaces()
        return connector

    def remove(self, name_or_class: str | type) -> None:
        """Removes the first piece with that name (or of that class)."""
        del self.connectors[self._index_of(name_or_class)]
        self._update_output_spaces()

    def __len__(self) -> int:
        return len(self.connectors)

    def __getitem__(self, key: PieceRef) -> ConnectorV2:
        """Returns a piece by position, name or class."""
        if isinstance(key, int):
            return self.connectors[key]
        return self.connectors[self._index_of(key)]

    def _index_of(self, name_or_class: str | type) -> int:
        by_name = isinstance(name_or_class, str)
        for index, piece in enumerate(self.connectors):
            if (piece.name == name_or_class) if by_name else isinstance(piece, name_or_class):
                return index
        target = name_or_class if by_name else name_or_class.__name__
        raise ConnectorError(
            f"The pipeline has no connector piece {target!r}; its pieces are "
            f"[{', '.join(piece.name for piece in self.connectors)}]. Pass the name or class of one of them."
        )

    def _update_output_spaces(self) -> None:
        obs_space, act_space = self._input_observation_space, self._input_action_space
        for piece in self.connectors:
            piece.set_input_spaces(obs_space, act_space)
            obs_space, act_space = piece.observation_space, piece.action_space
        self._observation_space, self._action_space = obs_space, act_space

    # State.

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        """Returns `{"<index>_<name>": state}` for every (selected) piece with a non-empty state."""
        states = {}
        for key, piece in self.get_checkpointable_components():
            if select(key, components, not_components)[0]:
                state = piece.get_state()
                if state:
                    states[key] = state
        return states

    def set_state(self, state: StateDict) -> None:
        keys = {f"{index}_{piece.name}": piece for index, piece in enumerate(self.connectors)}
        unknown = [key for key in state if key not in keys]
        if unknown:
            raise ConnectorError(
                f"Connector state has keys {unknown} that match no piece; expected keys among {list(keys)}. "
                f"Restore it into a pipeline with the same pieces in the same order."
            )
        for key, piece_state in state.items():
            keys[key].set_state(piece_state)

    def merge_states(self, states: list[StateDict]) -> StateDict:
        """Merges the pipeline states of several runners, piece by piece."""
        merged = {}
        for index, piece in enumerate(self.connectors):
            key = f"{index}_{piece.name}"
            piece_states = [state[key] for state in states if key in state]
            if piece_states:
                merged[key] = piece.merge_states(piece_states)
        return merged

    def reset_state(self) -> None:
        for piece in self.connectors:
            piece.reset_state()

    # Checkpoints: one sub-directory per piece; the pipeline itself records only its input spaces.

    def get_checkpointable_components(self) -> list[tuple[str, ConnectorV2]]:
        return [(f"{index}_{piece.name}", piece) for index, piece in enumerate(self.connectors)]

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {
            "input_observation_space": self.input_observation_space,
            "input_action_space": self.input_action_space,
        }

    @classmethod
    def _from_metadata(cls, node: Node, allowed: Allowed) -> Self:
        """The pipeline with every piece rebuilt from its sub-directory, in order (states come after,
        once the pieces know their input spaces)."""
        pipeline = super()._from_metadata(node, allowed)
        for child in node.children.values():
            pipeline.append(ConnectorV2._construct_from(child, allowed))
        return pipeline

    def __repr__(self) -> str:
        return f"ConnectorPipelineV2([{', '.join(piece.name for piece in self.connectors)}])"
