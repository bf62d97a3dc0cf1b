"""`RLlibCallback`: user code that runs at fixed points of training, sampling and evaluation.

Two ways to write callbacks, usable together::

    class LogLengths(RLlibCallback):
        def on_episode_end(self, *, episode, metrics_logger, **kwargs):
            metrics_logger.log_value("my_len", len(episode))

    config.callbacks(LogLengths, on_train_result=lambda result, **kw: print(result["training_iteration"]))

Every hook is called with keyword arguments only, so a function hook names just what it needs and
swallows the rest with ``**kw``. `AlgorithmConfig.build_callbacks()` merges the class and the function
hooks into one object; callers read `active_hooks` once and skip the hooks that do nothing, which
matters for `on_episode_step` (called every env step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm import Algorithm
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.env_runners.env_runner import EnvRunner
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType

from flywheel.errors import ConfigError

HOOK_NAMES: tuple[str, ...] = (
    "on_algorithm_init",
    "on_train_result",
    "on_episode_created",
    "on_episode_start",
    "on_episode_step",
    "on_episode_end",
    "on_sample_end",
    "on_environment_created",
    "on_evaluate_start",
    "on_evaluate_end",
    "on_checkpoint_loaded",
)
"""Every hook name, in the order they are documented (also the function-hook keywords of `config.callbacks()`)."""


class RLlibCallback:
    """Base class of user callbacks; every hook is a no-op until a subclass overrides it."""

    @property
    def active_hooks(self) -> frozenset[str]:
        """Names of the hooks that do something (overridden, or set on the instance by `build_callbacks`).

        Hooks outside the set are no-ops and need not be called at all. Computed on first access and
        then cached (a dict lookup, cheap enough for per-step checks), so set any hook on an instance
        before reading it.
        """
        active = self.__dict__.get("_active_hooks")
        if active is None:
            active = frozenset(name for name in HOOK_NAMES if _is_active(self, name))
            self.__dict__["_active_hooks"] = active
        return active

    def on_algorithm_init(
        self, *, algorithm: Algorithm, metrics_logger: MetricsLogger | None = None, **kwargs: object
    ) -> None:
        """After an Algorithm is fully built (runners, learners and modules exist)."""

    def on_train_result(
        self,
        *,
        algorithm: Algorithm,
        metrics_logger: MetricsLogger | None = None,
        result: dict | None = None,
        **kwargs: object,
    ) -> None:
        """After each `algo.train()` iteration, with its result dict (which the hook may extend)."""

    def on_episode_created(
        self,
        *,
        episode: EpisodeType,
        env_runner: EnvRunner | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: Any = None,
        env_index: int | None = None,
        rl_module: RLModule | None = None,
        **kwargs: object,
    ) -> None:
        """When a runner creates a new episode object, before the env is reset for it."""

    def on_episode_start(
        self,
        *,
        episode: EpisodeType,
        env_runner: EnvRunner | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: Any = None,
        env_index: int | None = None,
        rl_module: RLModule | None = None,
        **kwargs: object,
    ) -> None:
        """After the reset observation has been added to a new episode."""

    def on_episode_step(
        self,
        *,
        episode: EpisodeType,
        env_runner: EnvRunner | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: Any = None,
        env_index: int | None = None,
        rl_module: RLModule | None = None,
        **kwargs: object,
    ) -> None:
        """After every env step of an episode (hot path: keep it cheap)."""

    def on_episode_end(
        self,
        *,
        episode: EpisodeType,
        env_runner: EnvRunner | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: Any = None,
        env_index: int | None = None,
        rl_module: RLModule | None = None,
        **kwargs: object,
    ) -> None:
        """When an episode terminated or was truncated (its last step is already added)."""

    def on_sample_end(
        self,
        *,
        env_runner: EnvRunner | None = None,
        metrics_logger: MetricsLogger | None = None,
        samples: list | None = None,
        **kwargs: object,
    ) -> None:
        """At the end of `runner.sample()`, with the episodes it returns."""

    def on_environment_created(
        self,
        *,
        env_runner: EnvRunner | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: Any = None,
        env_context: Any = None,
        **kwargs: object,
    ) -> None:
        """After a runner created its (vector) env; `env_context` is the env_config it got."""

    def on_evaluate_start(
        self, *, algorithm: Algorithm, metrics_logger: MetricsLogger | None = None, **kwargs: object
    ) -> None:
        """Before an evaluation round starts."""

    def on_evaluate_end(
        self,
        *,
        algorithm: Algorithm,
        metrics_logger: MetricsLogger | None = None,
        evaluation_metrics: dict | None = None,
        **kwargs: object,
    ) -> None:
        """After an evaluation round, with its metrics (the `evaluation` part of the result)."""

    def on_checkpoint_loaded(self, *, algorithm: Algorithm, **kwargs: object) -> None:
        """After an Algorithm restored its state from a checkpoint."""


def _is_active(callback: RLlibCallback, name: str) -> bool:
    if name in vars(callback):
        return True
    return getattr(type(callback), name) is not getattr(RLlibCallback, name)


def make_callbacks(
    callbacks_class: Callable[[], RLlibCallback] | None,
    hooks: dict[str, Callable | Sequence[Callable] | None],
) -> RLlibCallback:
    """One `RLlibCallback` that runs the class's hook, then each function hook, with the same keywords.

    The result is what `callbacks_class` makes (a subclass, or RLlib's callable making one, such as a
    ``functools.partial`` of a subclass with its arguments), so its own state and ``isinstance`` checks work;
    hooks that have function hooks are replaced on the instance by a callable running all of them.
    """
    callback = (callbacks_class or RLlibCallback)()
    if not isinstance(callback, RLlibCallback):
        raise ConfigError(
            f"callbacks_class={callbacks_class!r} made {callback!r}, not an RLlibCallback. Fix: pass an "
            "RLlibCallback subclass, or a callable returning an instance of one, to config.callbacks()."
        )
    for name in HOOK_NAMES:
        functions = as_hook_list(hooks.get(name))
        if not functions:
            continue
        calls = ([getattr(callback, name)] if _is_active(callback, name) else []) + functions
        setattr(callback, name, calls[0] if len(calls) == 1 else _CallAll(calls))
    return callback


def as_hook_list(hook: Callable | Sequence[Callable] | None) -> list[Callable]:
    """A function-hook setting (None, one callable or a list of them) as a list."""
    if hook is None:
        return []
    if callable(hook):
        return [hook]
    return list(hook)


class _CallAll:
    """Calls several hooks in order with the same keywords (a class, not a closure, so it pickles)."""

    __slots__ = ("calls",)

    def __init__(self, calls: list[Callable]):
        self.calls = calls

    def __call__(self, **kwargs: object) -> None:
        for call in self.calls:
            call(**kwargs)
