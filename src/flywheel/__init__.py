"""flywheel: a fast, episode-based reinforcement-learning framework.

Public names are resolved lazily (PEP 562), so ``import flywheel`` stays cheap and never
imports ``ray``; ``from flywheel import PPOConfig`` imports only what that name needs.
"""

from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "Columns": "flywheel.columns",
    "AlgorithmConfig": "flywheel.algorithms.algorithm_config",
    "Algorithm": "flywheel.algorithms.algorithm",
    "PPO": "flywheel.algorithms.ppo",
    "PPOConfig": "flywheel.algorithms.ppo",
    "DQN": "flywheel.algorithms.dqn",
    "DQNConfig": "flywheel.algorithms.dqn",
    "SAC": "flywheel.algorithms.sac",
    "BC": "flywheel.algorithms.bc",
    "BCConfig": "flywheel.algorithms.bc",
    "MARWIL": "flywheel.algorithms.marwil",
    "MARWILConfig": "flywheel.algorithms.marwil",
    "CQL": "flywheel.algorithms.cql",
    "CQLConfig": "flywheel.algorithms.cql",
    "SACConfig": "flywheel.algorithms.sac",
    "IMPALA": "flywheel.algorithms.impala",
    "IMPALAConfig": "flywheel.algorithms.impala",
    "APPO": "flywheel.algorithms.appo",
    "APPOConfig": "flywheel.algorithms.appo",
    "register_env": "flywheel.env.make",
    "MultiAgentEnv": "flywheel.env.multi_agent_env",
    "SingleAgentEnvRunner": "flywheel.env_runners.single_agent",
    "MultiAgentEnvRunner": "flywheel.env_runners.multi_agent",
    "EnvRunnerGroup": "flywheel.env_runners.group",
    "SingleAgentEpisode": "flywheel.episodes.single_agent_episode",
    "MultiAgentEpisode": "flywheel.episodes.multi_agent_episode",
    "ConnectorV2": "flywheel.connectors.connector",
    "ConnectorPipelineV2": "flywheel.connectors.pipeline",
    "RLModule": "flywheel.core.rl_module.rl_module",
    "TorchRLModule": "flywheel.core.rl_module.torch_rl_module",
    "MultiRLModule": "flywheel.core.rl_module.multi_rl_module",
    "RLModuleSpec": "flywheel.core.rl_module.spec",
    "MultiRLModuleSpec": "flywheel.core.rl_module.spec",
    "ValueFunctionAPI": "flywheel.core.rl_module.apis",
    "TargetNetworkAPI": "flywheel.core.rl_module.apis",
    "Learner": "flywheel.core.learner.learner",
    "TorchLearner": "flywheel.core.learner.torch_learner",
    "LearnerGroup": "flywheel.core.learner.learner_group",
    "MetricsLogger": "flywheel.metrics.metrics_logger",
    "Checkpointable": "flywheel.checkpoints.checkpointable",
    "RLlibCallback": "flywheel.callbacks",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flywheel' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
