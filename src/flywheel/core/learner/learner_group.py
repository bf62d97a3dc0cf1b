"""`LearnerGroup`: the learners of an algorithm behind one interface (local now, Ray actors later)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flywheel.checkpoints.checkpointable import Checkpointable, select
from flywheel.core.learner.learner import Learner
from flywheel.errors import ConfigError
from flywheel.typing import ModuleID, StateDict


class LearnerGroup(Checkpointable):
    """Builds and drives the learners; the algorithm only talks to this.

    With `num_learners=0` there is one learner in this process (`is_local`). Every call goes
    through `foreach_learner`, the one place that will fan out to remote learners when they exist.

    Args:
        config: The algorithm config; `config.learner_class` (or the algorithm's default learner
            class) is built with `config`, `module_spec` and `spaces`.
        module_spec: What the learner builds (default: from the config and `spaces`).
        spaces: `(observation_space, action_space)` of the env-to-module pipeline's output.
    """

    def __init__(self, *, config: Any, module_spec: Any = None, spaces: tuple | None = None) -> None:
        if config.num_learners != 0:
            raise ConfigError(
                f"num_learners={config.num_learners} needs remote (Ray) learners, which this version "
                "does not provide yet. Fix: config.learners(num_learners=0) to train in this process."
            )
        self.config = config
        self._module_spec, self._spaces = module_spec, spaces
        learner_class = config.learner_class or config.get_default_learner_class()
        self._learner: Learner = learner_class(config=config, module_spec=module_spec, spaces=spaces)
        self._learner.build()

    @property
    def is_local(self) -> bool:
        """Whether the (only) learner runs in this process."""
        return True

    def foreach_learner(self, func: Callable[[Learner], Any]) -> list:
        """`[func(learner) for each learner]`."""
        return [func(self._learner)]

    def update(
        self,
        *,
        episodes: list,
        timesteps: dict | None = None,
        num_epochs: int | None = None,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool | None = None,
    ) -> dict:
        """One `Learner.update` on `episodes`; returns its results (plain numbers per module)."""
        kwargs = {
            "episodes": episodes,
            "timesteps": timesteps,
            "num_epochs": num_epochs,
            "minibatch_size": minibatch_size,
            "shuffle_batch_per_epoch": shuffle_batch_per_epoch,
        }
        return self.foreach_learner(lambda learner: learner.update(**kwargs))[0]

    def get_weights(self, inference_only: bool = True) -> dict[ModuleID, dict]:
        """The learner's module weights as numpy (what runners receive)."""
        return self.foreach_learner(lambda learner: learner.get_weights(inference_only=inference_only))[0]

    def set_weights(self, weights: dict[ModuleID, dict]) -> None:
        self.foreach_learner(lambda learner: learner.set_weights(weights))

    @property
    def weights_seq_no(self) -> int:
        return self.foreach_learner(lambda learner: learner.weights_seq_no)[0]

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        """`{"learner": learner.get_state(...)}`; `"learner/<key>"` selects inside the learner."""
        included, sub_components, sub_not_components = select("learner", components, not_components)
        if not included:
            return {}
        return {
            "learner": self.foreach_learner(
                lambda learner: learner.get_state(sub_components, sub_not_components)
            )[0]
        }

    def set_state(self, state: StateDict) -> None:
        if "learner" in state:
            self.foreach_learner(lambda learner: learner.set_state(state["learner"]))

    # Checkpoints.

    ctor_args_may_pickle = True

    def get_checkpointable_components(self) -> list[tuple[str, Checkpointable]]:
        return [("learner", self._learner)]

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {"config": self.config, "module_spec": self._module_spec, "spaces": self._spaces}
