"""The config an algorithm checkpoint was saved with, read back without running code it names.

`Algorithm.from_checkpoint` rebuilds the algorithm from it. Plain settings and flywheel's classes
always load; the caller's classes and functions load when passed (`classes=[...]`); lambdas and
closures, which only a pickle can store, load only when the caller trusts the checkpoint. Settings
the caller passes (`config={"policy_mapping_fn": fn}`) replace the saved ones unread, so a caller
who does not trust the checkpoint can still supply what the pickles held.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.checkpoints import codec, io
from flywheel.checkpoints.checkpointable import needs_trust, read_pickles
from flywheel.checkpoints.registry import Allowed
from flywheel.checkpoints.tree import Node
from flywheel.env.make import module_to_import
from flywheel.errors import CheckpointError, UntrustedCheckpointError


def saved_config(node: Node, allowed: Allowed, config: AlgorithmConfig | Mapping[str, Any] | None) -> Any:
    """The config to rebuild the algorithm at `node` with: `config` itself when it is a config, else the
    saved config with the settings in `config` (a dict) put in place of the saved ones."""
    if isinstance(config, AlgorithmConfig):
        return config
    if config is not None and not isinstance(config, Mapping):
        raise CheckpointError(
            f"{allowed.entry}(config=...) takes an AlgorithmConfig or a dict of settings, got "
            f"{type(config).__name__}. Fix: pass e.g. config={{'policy_mapping_fn': my_mapping_fn}}."
        )
    file = node.path / io.METADATA_FILE
    encoded = node.metadata.get("ctor_kwargs", {}).get("config")
    if isinstance(encoded, dict) and set(encoded) == {"__pickled__"}:
        return _pickled_config(node, allowed, config)
    if not (isinstance(encoded, dict) and isinstance(encoded.get("settings"), dict)):
        raise CheckpointError(f"{file} holds no algorithm config: the file is damaged or was edited.")
    given = dict(config or {})
    kept = {name: value for name, value in encoded["settings"].items() if name not in given}
    encoded = {**encoded, "settings": kept}
    pickled = codec.pickled_paths(encoded, "config")
    if pickled and not allowed.trusted:
        settings = dict.fromkeys(path.split(".")[1].split("[")[0] for path in pickled)
        names = ", ".join(f"{name!r}: ..." for name in settings)
        raise needs_trust(
            file,
            pickled,
            allowed.entry,
            f" Or pass those settings yourself: {allowed.entry}(path, config={{{names}}}); or build the "
            "algorithm from your own config and load only the states: algo = config.build_algo(); "
            "algo.restore_from_path(path).",
        )
    load_pickles = functools.cache(lambda: read_pickles(node)) if allowed.trusted else None
    saved = codec.decode(encoded, file, allowed, load_pickles)
    saved.update_from_dict(given)
    if not allowed.trusted:
        _check_env_imports(saved, file, allowed)
    return saved


def _check_env_imports(config: AlgorithmConfig, file: Any, allowed: Allowed) -> None:
    """A `"module:Id"` env makes gymnasium import `module`: only modules already imported, unless trusted."""
    envs = [config.env, (config.evaluation_config or {}).get("env")]
    for module in filter(None, map(module_to_import, envs)):
        raise UntrustedCheckpointError(
            f"{file} names the env of a module that is not imported yet ({module}); making it would import "
            f"{module}, and flywheel does not import what a checkpoint names.",
            f"import {module} yourself before loading, pass the env yourself ({allowed.entry}(path, "
            "config={'env': ...})), or, if you trust this checkpoint, pass trusted=True.",
        )


def _pickled_config(node: Node, allowed: Allowed, config: Mapping[str, object] | None) -> Any:
    """A config saved whole as a pickle: its class could not be imported where it was saved."""
    file = node.path / io.METADATA_FILE
    if not allowed.trusted:
        raise CheckpointError(
            f"{file} holds its config as a pickle, not as settings: the config's class could not be "
            "imported where the checkpoint was saved (it was defined inside a function, or in code run "
            f"by exec). Fix: if you trust the checkpoint, {allowed.entry}(path, trusted=True); or define "
            "the config class at the top level of a module or script and save again; or build the "
            "algorithm from your own config and load only the states: algo = config.build_algo(); "
            "algo.restore_from_path(path)."
        )
    pickled = codec.decode(node.metadata["ctor_kwargs"]["config"], file, allowed, lambda: read_pickles(node))
    saved = pickled.copy()  # unfrozen (the pickle is of the built algorithm's frozen config)
    saved.update_from_dict(dict(config or {}))
    return saved
