"""flywheel: a fast, episode-based reinforcement-learning framework.

Public names are resolved lazily (PEP 562), so ``import flywheel`` stays cheap and never
imports ``ray``; ``from flywheel import PPOConfig`` imports only what that name needs.
"""

from importlib import import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "Columns": "flywheel.columns",
    "AlgorithmConfig": "flywheel.algorithms.algorithm_config",
    "Algorithm": "flywheel.algorithms.algorithm",
    "PPO": "flywheel.algorithms.ppo",
    "PPOConfig": "flywheel.algorithms.ppo",
    "DQN": "flywheel.algorithms.dqn",
    "DQNConfig": "flywheel.algorithms.dqn",
    "DreamerV3": "flywheel.algorithms.dreamerv3",
    "DreamerV3Config": "flywheel.algorithms.dreamerv3",
    "SAC": "flywheel.algorithms.sac",
    "BC": "flywheel.algorithms.bc",
    "BCConfig": "flywheel.algorithms.bc",
    "MARWIL": "flywheel.algorithms.marwil",
    "MARWILConfig": "flywheel.algorithms.marwil",
    "CQL": "flywheel.algorithms.cql",
    "CQLConfig": "flywheel.algorithms.cql",
    "IQL": "flywheel.algorithms.iql",
    "IQLConfig": "flywheel.algorithms.iql",
    "SACConfig": "flywheel.algorithms.sac",
    "TQC": "flywheel.algorithms.tqc",
    "TQCConfig": "flywheel.algorithms.tqc",
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

if TYPE_CHECKING:  # what editors and type checkers see; at run time each name loads on first use
    from flywheel.algorithms.algorithm import Algorithm
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.algorithms.appo import APPO, APPOConfig
    from flywheel.algorithms.bc import BC, BCConfig
    from flywheel.algorithms.cql import CQL, CQLConfig
    from flywheel.algorithms.dqn import DQN, DQNConfig
    from flywheel.algorithms.dreamerv3 import DreamerV3, DreamerV3Config
    from flywheel.algorithms.impala import IMPALA, IMPALAConfig
    from flywheel.algorithms.iql import IQL, IQLConfig
    from flywheel.algorithms.marwil import MARWIL, MARWILConfig
    from flywheel.algorithms.ppo import PPO, PPOConfig
    from flywheel.algorithms.sac import SAC, SACConfig
    from flywheel.algorithms.tqc import TQC, TQCConfig
    from flywheel.callbacks import RLlibCallback
    from flywheel.checkpoints.checkpointable import Checkpointable
    from flywheel.columns import Columns
    from flywheel.connectors.connector import ConnectorV2
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.learner.learner import Learner
    from flywheel.core.learner.learner_group import LearnerGroup
    from flywheel.core.learner.torch_learner import TorchLearner
    from flywheel.core.rl_module.apis import TargetNetworkAPI, ValueFunctionAPI
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
    from flywheel.core.rl_module.torch_rl_module import TorchRLModule
    from flywheel.env.make import register_env
    from flywheel.env.multi_agent_env import MultiAgentEnv
    from flywheel.env_runners.group import EnvRunnerGroup
    from flywheel.env_runners.multi_agent import MultiAgentEnvRunner
    from flywheel.env_runners.single_agent import SingleAgentEnvRunner
    from flywheel.episodes.multi_agent_episode import MultiAgentEpisode
    from flywheel.episodes.single_agent_episode import SingleAgentEpisode
    from flywheel.metrics.metrics_logger import MetricsLogger

__all__ = [
    "APPO",
    "APPOConfig",
    "Algorithm",
    "AlgorithmConfig",
    "BC",
    "BCConfig",
    "CQL",
    "CQLConfig",
    "Checkpointable",
    "Columns",
    "ConnectorPipelineV2",
    "ConnectorV2",
    "DQN",
    "DQNConfig",
    "DreamerV3",
    "DreamerV3Config",
    "EnvRunnerGroup",
    "IMPALA",
    "IMPALAConfig",
    "IQL",
    "IQLConfig",
    "Learner",
    "LearnerGroup",
    "MARWIL",
    "MARWILConfig",
    "MetricsLogger",
    "MultiAgentEnv",
    "MultiAgentEnvRunner",
    "MultiAgentEpisode",
    "MultiRLModule",
    "MultiRLModuleSpec",
    "PPO",
    "PPOConfig",
    "RLModule",
    "RLModuleSpec",
    "RLlibCallback",
    "SAC",
    "SACConfig",
    "SingleAgentEnvRunner",
    "SingleAgentEpisode",
    "TQC",
    "TQCConfig",
    "TargetNetworkAPI",
    "TorchLearner",
    "TorchRLModule",
    "ValueFunctionAPI",
    "register_env",
    "__version__",
]  # _EXPORTS' names (tests/test_exports.py checks)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flywheel' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
