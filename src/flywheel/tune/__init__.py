"""Ray Tune for flywheel: grid and random search, Optuna, Population Based Training, stop criteria and
best-checkpoint selection, on one machine or a cluster.

    from ray import tune
    import flywheel.tune

    config = PPOConfig().environment("CartPole-v1").training(lr=tune.grid_search([1e-3, 1e-4]))
    tuner = tune.Tuner(
        flywheel.tune.trainable("PPO"),
        param_space=config,                   # an AlgorithmConfig (or its to_dict()) with search spaces
        tune_config=tune.TuneConfig(metric="env_runners/episode_return_mean", mode="max"),
        run_config=tune.RunConfig(stop={"training_iteration": 20}),
    )
    best = tuner.fit().get_best_result()
    policy = load_policy(best.checkpoint.path)

`flywheel.tune.register()` registers the built-in algorithms with Tune by name, so RLlib's form
`tune.Tuner("PPO", param_space=config)` runs flywheel's PPO. `flywheel.tune.Tuner` (what `flywheel port`
makes of `tune.Tuner`) needs no registering: it takes `config.algo_class` or "PPO" as RLlib's programs
pass them. Importing this module does not import `ray`; `trainable()`, `register()` and `Tuner` do.
"""

from __future__ import annotations

from typing import Any

from flywheel.algorithms.registry import available_algorithms, config_class_of
from flywheel.algorithms.registry import config_class as registered_config_class
from flywheel.errors import ConfigError

__all__ = ["Tuner", "register", "trainable"]


def trainable(algo: str | type, *, config_class: type | None = None) -> type:
    """A `ray.tune.Trainable` subclass that trains `algo` (a registered name such as "PPO", or an
    `Algorithm` subclass), one algorithm per trial.

    Tune gives each trial a dict of settings (the param space with its search spaces resolved);
    the trial's config is `config_class` (default: the registered config of `algo`, e.g. PPOConfig)
    with those settings. Results are the algorithm's result dicts, checkpoints are flywheel
    checkpoints, and `default_resource_request` asks for the trial's main process, runners and
    learners as one placement group. Envs given to `flywheel.register_env` before this call are
    registered again in the trials' processes.
    """
    from flywheel.algorithms.algorithm import Algorithm
    from flywheel.tune.algorithm_trainable import make_trainable

    if isinstance(algo, str):
        config_class = config_class or registered_config_class(algo)
        return make_trainable(algo, config_class().algo_class, config_class)
    if not (isinstance(algo, type) and issubclass(algo, Algorithm)):
        raise ConfigError(
            f"trainable() expects an algorithm name such as 'PPO' or an Algorithm subclass, got {algo!r}. "
            f"Fix: pass one of {available_algorithms()} or your Algorithm class."
        )
    return make_trainable(algo.__name__, algo, config_class or config_class_of(algo))


def register(*names: str, **kwargs: Any) -> None:
    """Registers `trainable(name)` with Ray Tune under each name (default: every built-in algorithm,
    "PPO", "DQN", "SAC", "IMPALA", "APPO"), so `tune.Tuner("PPO", param_space=config)` trains flywheel's PPO.

    Call it after your `flywheel.register_env` calls and before building the Tuner: Tune keeps the
    registered class as it is at this call (and without it, Tune would look the name up in RLlib).
    `kwargs` go to `trainable()`.
    """
    from ray import tune

    for name in names or available_algorithms():
        tune.register_trainable(name, trainable(name, **kwargs))


def __getattr__(name: str) -> Any:
    if name == "Tuner":  # imports ray: only when asked for
        from flywheel.tune.tuner import Tuner

        return Tuner
    raise AttributeError(f"module 'flywheel.tune' has no attribute {name!r}")
