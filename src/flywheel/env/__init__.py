"""Environments: resolving ``env`` specs into (vector) envs, and the one-time env check."""

from flywheel.env.checks import SUPPORTED_SPACES, check_env
from flywheel.env.make import (
    INPUT_ENV_SINGLE_SPACES,
    INPUT_ENV_SPACES,
    VECTORIZE_MODES,
    EnvContext,
    is_atari_env,
    make_env,
    make_env_creator,
    make_vector_env,
    register_env,
    seed_for,
)
from flywheel.env.multi_agent_checks import check_multi_agent_env
from flywheel.env.multi_agent_env import MultiAgentEnv, make_multi_agent
from flywheel.env.multi_agent_vector_env import (
    MultiAgentAsyncVectorEnv,
    MultiAgentSyncVectorEnv,
    make_multi_agent_vector_env,
)

__all__ = [
    "INPUT_ENV_SINGLE_SPACES",
    "INPUT_ENV_SPACES",
    "SUPPORTED_SPACES",
    "VECTORIZE_MODES",
    "EnvContext",
    "MultiAgentAsyncVectorEnv",
    "MultiAgentEnv",
    "MultiAgentSyncVectorEnv",
    "check_env",
    "check_multi_agent_env",
    "is_atari_env",
    "make_env",
    "make_env_creator",
    "make_multi_agent",
    "make_multi_agent_vector_env",
    "make_vector_env",
    "register_env",
    "seed_for",
]
