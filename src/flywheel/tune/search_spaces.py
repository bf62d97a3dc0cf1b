"""Checks that Ray Tune resolved every search space in a trial's settings.

Tune resolves search spaces (`tune.choice`, `tune.grid_search`, ...) inside dicts and lists, at any
depth: `model_config`, `env_config`, a `policies` dict, an `lr` schedule. It does not look inside
other objects, so a search space in an `RLModuleSpec` would reach the algorithm unresolved; this
module finds it first and says where it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ray.tune.search.sample import Domain

from flywheel.errors import ConfigError


def check_resolved(settings: Mapping[str, object]) -> None:
    """Raises ConfigError naming every place in `settings` that still holds a search space."""
    found = [path for name, value in settings.items() for path in _unresolved(value, name)]
    if found:
        raise ConfigError(
            f"Ray Tune left search spaces unresolved at {', '.join(found)}: Tune resolves them only inside "
            "dicts and lists, not inside objects such as RLModuleSpec. Fix: put the search space in a dict "
            "setting (e.g. config.rl_module(model_config={'fcnet_hiddens': tune.choice([[32], [64]])})), "
            "or make the whole setting a search space (tune.grid_search([spec_a, spec_b]))."
        )


def _unresolved(value: object, path: str) -> list[str]:
    if isinstance(value, Domain) or (isinstance(value, Mapping) and set(value) == {"grid_search"}):
        return [path]
    if isinstance(value, Mapping):
        return [p for key, item in value.items() for p in _unresolved(item, f"{path}[{key!r}]")]
    if isinstance(value, list | tuple | set | frozenset):
        return [p for index, item in enumerate(value) for p in _unresolved(item, f"{path}[{index}]")]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return [p for f in fields for p in _unresolved(getattr(value, f.name), f"{path}.{f.name}")]
    return []
