"""`ConnectorV2`: one piece of a connector pipeline.

A piece transforms a batch (and may rewrite the episodes it is built from) between two parts of the
loop: env → module, module → env, or episodes → learner. The driving loop, on a runner, is::

    batch = env_to_module(rl_module=module, batch={}, episodes=episodes, explore=explore)
    out = module.forward_exploration(batch)
    out = module_to_env(rl_module=module, batch=out, episodes=episodes, explore=explore)
    env.step(out[Columns.ACTIONS_FOR_ENV])

A piece that changes what the module sees declares it in `recompute_output_observation_space` /
`recompute_output_action_space`, so the module is built for the right spaces and nothing guesses shapes.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from flywheel.checkpoints.checkpointable import Checkpointable
from flywheel.connectors import batch_items
from flywheel.typing import StateDict

if TYPE_CHECKING:
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class ConnectorV2(Checkpointable, abc.ABC):
    """Base class of every connector piece (and of `ConnectorPipelineV2`).

    `input_observation_space` / `input_action_space` are what this piece receives; the
    `observation_space` / `action_space` properties are what it hands on, recomputed whenever an input
    space is set.

    The arguments a piece was constructed with are recorded (in `__new__`, so subclasses need not
    pass them on) and saved in checkpoints, which rebuild the piece as `cls(*args, **kwargs)`.
    """

    _ctor_args_and_kwargs: tuple[tuple, dict[str, Any]]

    def __new__(cls, *args: object, **kwargs: object):
        piece = super().__new__(cls)
        piece._ctor_args_and_kwargs = (args, kwargs)
        return piece

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        **kwargs: object,
    ):
        self._input_observation_space = input_observation_space
        self._input_action_space = input_action_space
        self._observation_space: gym.Space | None = None
        self._action_space: gym.Space | None = None
        self._update_output_spaces()

    @abc.abstractmethod
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
        """Transforms `batch` (and possibly `episodes`) and returns the batch.

        Args:
            rl_module: The module the batch is for (or comes from).
            batch: The batch built so far; pieces add columns to it and return it.
            episodes: The episodes the batch is built from, in sub-env (or train-batch) order.
            explore: Whether the runner is exploring (sampling) or acting greedily.
            shared_data: A dict the pieces of one pipeline call share with each other.
            metrics: The caller's `MetricsLogger`, for pieces that log.
        """

    # Spaces.

    @property
    def input_observation_space(self) -> gym.Space | None:
        return self._input_observation_space

    @input_observation_space.setter
    def input_observation_space(self, space: gym.Space | None) -> None:
        self._input_observation_space = space
        self._update_output_spaces()

    @property
    def input_action_space(self) -> gym.Space | None:
        return self._input_action_space

    @input_action_space.setter
    def input_action_space(self, space: gym.Space | None) -> None:
        self._input_action_space = space
        self._update_output_spaces()

    @property
    def observation_space(self) -> gym.Space | None:
        """The observation space this piece outputs (None while the input space is unknown)."""
        return self._observation_space

    @property
    def action_space(self) -> gym.Space | None:
        """The action space this piece outputs (None while the input space is unknown)."""
        return self._action_space

    def set_input_spaces(self, observation_space: gym.Space | None, action_space: gym.Space | None) -> None:
        """Sets both input spaces and recomputes the output spaces once (pipelines chain pieces with it)."""
        self._input_observation_space = observation_space
        self._input_action_space = action_space
        self._update_output_spaces()

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        """Returns the observation space this piece outputs; override when the piece changes it."""
        return input_observation_space

    def recompute_output_action_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space
    ) -> gym.Space | None:
        """Returns the action space this piece outputs; override when the piece changes it."""
        return input_action_space

    def _update_output_spaces(self) -> None:
        obs_space, act_space = self._input_observation_space, self._input_action_space
        self._observation_space = (
            None if obs_space is None else self.recompute_output_observation_space(obs_space, act_space)
        )
        self._action_space = (
            None if act_space is None else self.recompute_output_action_space(obs_space, act_space)
        )

    @property
    def required_episode_lookback(self) -> int:
        """Steps of history before a chunk's start that this piece reads (e.g. `FrameStacking`'s earlier
        frames). Runners cut ongoing episodes with at least this much lookback, whatever
        `episode_lookback_horizon` says, so a continuing chunk reads what it needs; 0 by default."""
        return 0

    def is_noop_for(self, rl_module: RLModule | MultiRLModule) -> bool:
        """Whether this piece leaves every batch, episode and `shared_data` as they are when called
        with `rl_module` (e.g. the recurrent-state pieces with a stateless module); a pipeline then
        skips it. False by default, so a piece is called unless it says otherwise."""
        return False

    adds_whole_columns: bool = False
    """Whether every column this piece adds to a batch holds all its rows at once (arrays, nested or
    not), never items per episode for `BatchIndividualItems` to stack (see `is_noop_after`)."""

    only_builds_batch: bool = False
    """Whether this piece's only effects are the batch it returns and the call's `shared_data`: it
    writes no episode, keeps no state and logs no metrics. A runner skips a pipeline call whose batch
    and `shared_data` it discards (the env-to-module call on finished episodes, which lets pieces see
    their final observations) when every piece it would call says so (`builds_only_batches`)."""

    def is_noop_after(self, pieces: Sequence[ConnectorV2]) -> bool:
        """Whether this piece does nothing when `pieces` are all that ran before it in a pipeline call
        that began with an empty batch (e.g. `BatchIndividualItems` after pieces that each add whole
        columns); a pipeline then skips it in such calls. False by default."""
        return False

    # Batch helpers (RLlib's; see `flywheel.connectors.batch_items` for how items reach the batch).

    add_batch_item = staticmethod(batch_items.add_batch_item)
    add_n_batch_items = staticmethod(batch_items.add_n_batch_items)
    foreach_batch_item_change_in_place = staticmethod(batch_items.foreach_batch_item_change_in_place)
    single_agent_episode_iterator = staticmethod(batch_items.single_agent_episode_iterator)
    switch_batch_from_column_to_module_ids = staticmethod(batch_items.switch_batch_from_column_to_module_ids)

    # State (only stateful pieces override these).

    def get_state(self) -> StateDict:
        """Returns this piece's state as plain data (`{}` for stateless pieces)."""
        return {}

    def set_state(self, state: StateDict) -> None:  # noqa: B027 (optional hook, no-op by default)
        """Restores a state returned by `get_state` (or by `merge_states`)."""

    def merge_states(self, states: list[StateDict]) -> StateDict:
        """Combines the states of the same piece on several runners into one.

        The default keeps the first: right for pieces whose state does not depend on the data seen.
        """
        return states[0] if states else {}

    def reset_state(self) -> None:  # noqa: B027 (optional hook, no-op by default)
        """Forgets everything this piece learned from data (e.g. running statistics)."""

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        """The arguments this piece was constructed with (checkpoints rebuild it from them)."""
        return self._ctor_args_and_kwargs

    # Naming.

    @property
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{self.name}()"
