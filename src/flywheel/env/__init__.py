"""Environments: resolving ``env`` specs into (vector) envs, and the one-time env check."""

from flywheel.env.checks import SUPPORTED_SPACES, check_env
from flywheel.env.make import (
    VECTORIZE_MODES,
    EnvContext,
    make_env_creator,
    make_vector_env,
    register_env,
    seed_for,
)

__all__ = [
    "SUPPORTED_SPACES",
    "VECTORIZE_MODES",
    "EnvContext",
    "check_env",
    "make_env_creator",
    "make_vector_env",
    "register_env",
    "seed_for",
]
