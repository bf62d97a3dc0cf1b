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
pass them. Importing this module does not import `ray`; `trainable` and `Tuner` (resolved on first use)
and `register()` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flywheel.algorithms.registry import available_algorithms

if TYPE_CHECKING:
    from flywheel.tune.algorithm_trainable import trainable
    from flywheel.tune.tuner import Tuner

__all__ = ["Tuner", "register", "trainable"]


def register(*names: str, **kwargs: Any) -> None:
    """Registers `trainable(name)` with Ray Tune under each name (default: every built-in algorithm,
    "PPO", "DQN", "SAC", "IMPALA", "APPO"), so `tune.Tuner("PPO", param_space=config)` trains flywheel's PPO.

    Call it after your `flywheel.register_env` calls and before building the Tuner: Tune keeps the
    registered class as it is at this call (and without it, Tune would look the name up in RLlib).
    `kwargs` go to `trainable()`.
    """
    from ray import tune

    from flywheel.tune.algorithm_trainable import trainable

    for name in names or available_algorithms():
        tune.register_trainable(name, trainable(name, **kwargs))


def __getattr__(name: str) -> Any:
    if name == "Tuner":  # imports ray: only when asked for
        from flywheel.tune.tuner import Tuner

        return Tuner
    if name == "trainable":  # imports ray: only when asked for
        from flywheel.tune.algorithm_trainable import trainable

        return trainable
    raise AttributeError(f"module 'flywheel.tune' has no attribute {name!r}")
