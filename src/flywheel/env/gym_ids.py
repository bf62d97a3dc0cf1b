"""Gymnasium ids: their spec, importing the module a ``"module:Id-v0"`` id names, and registering the
envs of packages whose ids flywheel knows by namespace (``"ALE/..."``, ``"MinAtar/..."``) on first use."""

from __future__ import annotations

import importlib

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from flywheel.errors import EnvError

# Id namespaces whose envs a package registers: (module to import, its function that registers them
# or None when importing does, the flywheel extra that installs it).
NAMESPACES = {"ALE": ("ale_py", None, "ale"), "MinAtar": ("minatar.gym", "register_envs", "minatar")}


def gym_spec(env_id: str) -> EnvSpec | None:
    """The gymnasium spec of ``env_id``, or None when gymnasium does not know it."""
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise EnvError(
                f"env {env_id!r} names module {module!r} to import before making {name!r}, but importing it "
                f"failed ({e}). Fix: install the package that provides {module!r} or correct the id."
            ) from e
    try:
        return gym.spec(name)
    except gym.error.Error:
        pass
    namespace = name.partition("/")[0] if "/" in name else None
    if namespace not in NAMESPACES or any(spec.namespace == namespace for spec in gym.registry.values()):
        return None  # not a namespace flywheel knows, or its package registered it already
    package, register, extra = NAMESPACES[namespace]
    try:
        registered = importlib.import_module(package)
    except ImportError as e:
        raise EnvError(
            f"env {env_id!r} is a {namespace} env, which needs the {package.split('.')[0]!r} package, but "
            f"importing {package!r} failed ({e}). Fix: pip install 'flywheel[{extra}]'."
        ) from e
    if register is not None:
        getattr(registered, register)()
    try:
        return gym.spec(name)
    except gym.error.Error:
        return None
