"""The names of an algorithm checkpoint's components: sub-directories on disk and keys of `get_state()`.

RLlib 2.60 names its checkpoint components with these constants (`ray.rllib.core`); flywheel's layout
uses the same names, so code that selects or restores components by them works unchanged:

    algo.restore_from_path(path, component=f"{COMPONENT_LEARNER_GROUP}/{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}/p0")
    algo.get_state(components=COMPONENT_ENV_RUNNER)

    <checkpoint>/
        learner_group/                      COMPONENT_LEARNER_GROUP
            learner/                        COMPONENT_LEARNER (its state also holds COMPONENT_OPTIMIZER)
                rl_module/<module_id>/      COMPONENT_RL_MODULE
        env_runner/                         COMPONENT_ENV_RUNNER
            env_to_module_connector/        COMPONENT_ENV_TO_MODULE_CONNECTOR
            module_to_env_connector/        COMPONENT_MODULE_TO_ENV_CONNECTOR
            rl_module/                      COMPONENT_RL_MODULE
    (state only) metrics                    COMPONENT_METRICS_LOGGER

RLlib's `COMPONENT_EVAL_ENV_RUNNER` has no counterpart: flywheel does not checkpoint evaluation runners
(they get the learners' weights when they evaluate).
"""

COMPONENT_LEARNER_GROUP = "learner_group"
COMPONENT_LEARNER = "learner"
COMPONENT_RL_MODULE = "rl_module"
COMPONENT_OPTIMIZER = "optimizer"
COMPONENT_ENV_RUNNER = "env_runner"
COMPONENT_ENV_TO_MODULE_CONNECTOR = "env_to_module_connector"
COMPONENT_MODULE_TO_ENV_CONNECTOR = "module_to_env_connector"
COMPONENT_METRICS_LOGGER = "metrics"
"""The algorithm's metrics in `get_state()` (flywheel's key; RLlib's value is "metrics_logger")."""
