"""flywheel's config defaults against RLlib 2.60's, read from the installed wheel at test time.

A child process imports RLlib's config classes, instantiates them and prints, for every setting
flywheel has, RLlib's value as JSON (this process never imports `ray.rllib`). Every difference must
be listed in `ALLOWED_DIFFERENCES` with its reason, every setting RLlib does not have in
`FLYWHEEL_ONLY`, and values that are written differently but mean the same in `SAME_MEANING`.
The "Defaults" section of docs/porting.md is generated from the same tables; regenerate it with

    PYTHONPATH=src python tests/porting/test_rllib_defaults.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from flywheel.algorithms.appo.config import APPOConfig
from flywheel.algorithms.bc.config import BCConfig
from flywheel.algorithms.cql.config import CQLConfig
from flywheel.algorithms.dqn.config import DQNConfig
from flywheel.algorithms.dreamerv3.config import DreamerV3Config
from flywheel.algorithms.impala.config import IMPALAConfig
from flywheel.algorithms.iql.config import IQLConfig
from flywheel.algorithms.marwil.config import MARWILConfig
from flywheel.algorithms.ppo.config import PPOConfig
from flywheel.algorithms.sac.config import SACConfig
from flywheel.algorithms.tqc.config import TQCConfig
from flywheel.core.models.config import DEFAULT_MODEL_CONFIG

CONFIGS = {
    "PPO": (PPOConfig, "ray.rllib.algorithms.ppo"),
    "APPO": (APPOConfig, "ray.rllib.algorithms.appo"),
    "IMPALA": (IMPALAConfig, "ray.rllib.algorithms.impala"),
    "DQN": (DQNConfig, "ray.rllib.algorithms.dqn"),
    "SAC": (SACConfig, "ray.rllib.algorithms.sac"),
    "BC": (BCConfig, "ray.rllib.algorithms.bc"),
    "MARWIL": (MARWILConfig, "ray.rllib.algorithms.marwil"),
    "CQL": (CQLConfig, "ray.rllib.algorithms.cql"),
    "IQL": (IQLConfig, "ray.rllib.algorithms.iql"),
    "TQC": (TQCConfig, "ray.rllib.algorithms.tqc"),
    "DreamerV3": (DreamerV3Config, "ray.rllib.algorithms.dreamerv3"),
}
ALL = tuple(CONFIGS)

# flywheel's setting name -> the attribute RLlib stores it in, where they differ (RLlib's public
# properties of these resolve other settings in, e.g. train_batch_size_per_learner from
# train_batch_size; the stored value is the default the user left).
RLLIB_ATTRIBUTES = {
    "env_to_module_connector": "_env_to_module_connector",
    "module_to_env_connector": "_module_to_env_connector",
    "learner_connector": "_learner_connector",
    "learner_class": "_learner_class",
    "rl_module_spec": "_rl_module_spec",
    "model_config": "_model_config",
    "train_batch_size_per_learner": "_train_batch_size_per_learner",
    **{
        f"on_{hook}": f"callbacks_on_{hook}"
        for hook in (
            "algorithm_init", "train_result", "episode_created", "episode_start", "episode_step",
            "episode_end", "sample_end", "environment_created", "evaluate_start", "evaluate_end",
            "checkpoint_loaded",
        )
    },
}  # fmt: skip

# (setting, RLlib's value as JSON, flywheel's value as JSON) -> why they mean the same.
SAME_MEANING = {
    ("policies", '{"default_policy": null}', '["default_policy"]'): (
        "one module, `default_policy`, with the algorithm's default spec (RLlib: an empty PolicySpec)"
    ),
    (
        "policy_mapping_fn",
        '"ray.rllib.algorithms.algorithm_config.AlgorithmConfig.DEFAULT_POLICY_MAPPING_FN"',
        "null",
    ): "every agent maps to `default_policy`",
    ("callbacks_class", '"ray.rllib.callbacks.callbacks.RLlibCallback"', "null"): (
        "no class hooks (RLlib: the base class, whose hooks do nothing)"
    ),
    ("input_", '"sampler"', "null"): "sample the env (no offline input)",
    ("min_time_s_per_iteration", "null", "0"): "no minimum time per iteration",
}

# Settings RLlib 2.60 does not have -> why flywheel has them (their defaults change nothing RLlib does).
FLYWHEEL_ONLY = {
    "env_wrappers": "gymnasium wrappers around every sub-env; default none",
    "normalize_rewards": "SB3/CleanRL-style reward scaling; default off",
    "adam_epsilon": "Adam's epsilon, torch's default 1e-8 (what RLlib's torch optimizers use)",
    "vf_clip_range": "PPO2/CleanRL value clipping; default off",
    "advantage_normalization": 'where advantages are standardized; default "batch", RLlib\'s way',
    "input_ignore_corrupt_files": "skip damaged offline input files with a warning; default off (an error naming the file)",
}

_NO_RAY = "flywheel keeps 0 on purpose: with 0 it samples and learns in the calling process, without Ray"
_AUTO_CPUS = (
    "not yet: flywheel takes a number; RLlib's 'auto' means 1 CPU for a learner without GPUs, 0 with one"
)
_NOISY = "not yet: noisy nets (RLlib's noisy/sigma0/std_init) are not in flywheel"
_PRIORITIZED = (
    "not yet: prioritized replay as the default changes every DQN/SAC learning test and example; "
    "pass replay_buffer_config={'type': 'PrioritizedEpisodeReplayBuffer', ...} for RLlib's"
)

# (setting, algorithms) -> why flywheel's default differs from RLlib 2.60's.
ALLOWED_DIFFERENCES: dict[tuple[str, tuple[str, ...]], str] = {
    ("num_env_runners", ("PPO",)): _NO_RAY,
    ("num_learners", ("APPO", "IMPALA")): _NO_RAY,
    ("num_cpus_per_learner", ALL): _AUTO_CPUS,
    ("model_config[std_init]", ("DQN",)): _NOISY,
    ("lr", ("CQL",)): (
        "on purpose: CQL, as SAC, trains with actor_lr/critic_lr/alpha_lr; None makes a rate passed as lr a "
        "named error instead of a silently unused number (RLlib's 3e-4 is unused)"
    ),
    ("output_write_remaining_data", ALL): (
        "on purpose: a recording keeps every sampled row unless asked otherwise (RLlib drops the rows still "
        "buffered at stop by default)"
    ),
    ("replay_buffer_config", ("DQN", "SAC", "TQC")): _PRIORITIZED,
    ("replay_buffer_config", ("CQL",)): (
        "CQL trains on offline data, not from a replay buffer (RLlib's value is its old stack's buffer "
        "config); flywheel's CQL keeps SAC's"
    ),
    ("rollout_fragment_length", ("DQN",)): (
        "not yet: 'auto' makes each DQN training step sample train_batch_size env steps (32 without "
        "remote runners) instead of 4, which changes every DQN learning test"
    ),
    ("rollout_fragment_length", ("SAC", "CQL", "TQC")): (
        "not yet: 'auto' makes each SAC training step sample 256 env steps instead of 1, which changes "
        "every SAC learning test (TQC inherits SAC's value, and CQL, which samples only to evaluate)"
    ),
    ("train_batch_size_per_learner", ("SAC", "CQL", "TQC")): (
        "not yet: flywheel sets train_batch_size=256 (the same batch with one learner); with RLlib's "
        "train_batch_size_per_learner=256 the many tests that set train_batch_size would be ignored"
    ),
    ("min_time_s_per_iteration", ("SAC", "CQL", "TQC")): (
        "not yet: a 1-second minimum per iteration would make every SAC/CQL test that counts "
        "iterations take seconds longer"
    ),
    ("shuffle_batch_per_epoch", ("APPO", "IMPALA", "BC", "MARWIL")): (
        "not yet: flywheel's shared default is True (RLlib's is False, PPO's True); it has no effect at "
        "their num_epochs=1 (a single epoch keeps the sampled order on both), and with more epochs "
        "switching it changes the minibatches, and so the numbers, of learning tests that set them"
    ),
    ("min_sample_timesteps_per_iteration", ("SAC", "TQC")): (
        "not yet: SAC keeps DQN's 1000 env steps per iteration; 100 changes where the SAC learning tests "
        "and examples stop and what they report"
    ),
}

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "porting.md"
BEGIN = "<!-- defaults table: generated by tests/porting/test_rllib_defaults.py -->"
END = "<!-- end of defaults table -->"

_CHILD = r"""
import importlib, json, sys, types
request = json.load(sys.stdin)

def plain(value):
    if type(value).__name__ == "PolicySpec":
        fields = [value.policy_class, value.observation_space, value.action_space, value.config]
        return None if all(f is None for f in fields) else repr(value)
    if isinstance(value, (type, types.FunctionType)):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)

missing = object()
out = {}
for algo, (module, names) in request.items():
    config = getattr(importlib.import_module(module), algo + "Config")()
    values = {}
    for name, attribute in names.items():
        value = getattr(config, attribute, missing)
        values[name] = {"missing": True} if value is missing else {"value": plain(value)}
    values["model_config (auto-included)"] = {"value": plain(config._model_config_auto_includes)}
    out[algo] = values
print(json.dumps(out))
"""


def _plain(value: Any) -> Any:
    """flywheel's value in the child's JSON form (sets sorted, tuples as lists, classes by name)."""
    if isinstance(value, set | frozenset):
        return sorted(_plain(v) for v in value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, type) or callable(value):
        return f"{value.__module__}.{value.__qualname__}"
    return value


@cache
def rllib_defaults() -> dict[str, dict[str, dict]]:
    """RLlib 2.60's defaults, from its config classes instantiated in a child process."""
    request = {
        algo: (module, {name: RLLIB_ATTRIBUTES.get(name, name) for name in config.setting_names()})
        for algo, (config, module) in CONFIGS.items()
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], input=json.dumps(request), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _flywheel_model_config(config: Any, key: str) -> dict:
    """flywheel's value for a key RLlib auto-includes into model_config: the algorithm setting of that
    name (e.g. DQN's double_q), else what the default module reads."""
    if key in config.setting_names():
        return {"value": _plain(getattr(config, key))}
    module_defaults = {**DEFAULT_MODEL_CONFIG, **(config.get_default_rl_module_spec().model_config or {})}
    if key in module_defaults:
        return {"value": _plain(module_defaults[key])}
    return {"missing": True}


def comparison() -> list[tuple[str, str, str, str]]:
    """(algorithm, setting, flywheel's value, RLlib's value) for every setting whose defaults differ
    and do not mean the same (values as JSON; "-" where one side has no such setting)."""
    rows = []
    for algo, (config_class, _) in CONFIGS.items():
        config = config_class()
        rllib = rllib_defaults()[algo]
        pairs = [
            (name, {"value": _plain(getattr(config, name))}, rllib[name]) for name in config.setting_names()
        ]
        for key, value in rllib["model_config (auto-included)"]["value"].items():
            pairs.append((f"model_config[{key}]", _flywheel_model_config(config, key), {"value": value}))
        for name, ours, theirs in pairs:
            ours_text = json.dumps(ours["value"]) if "value" in ours else "-"
            theirs_text = json.dumps(theirs["value"]) if "value" in theirs else "-"
            if ours_text != theirs_text and (name, theirs_text, ours_text) not in SAME_MEANING:
                rows.append((algo, name, ours_text, theirs_text))
    return rows


def allowance(algo: str, name: str) -> str | None:
    """The reason a difference of `name` in `algo` is allowed (None: not allowed)."""
    if name in FLYWHEEL_ONLY:
        return FLYWHEEL_ONLY[name]
    return next(
        (why for (setting, algos), why in ALLOWED_DIFFERENCES.items() if setting == name and algo in algos),
        None,
    )


def defaults_table() -> str:
    """The "Defaults" table of docs/porting.md: the differences, grouped by setting and values."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    only: dict[str, list[str]] = {}
    for algo, name, ours, theirs in comparison():
        if name in FLYWHEEL_ONLY:
            only.setdefault(name, []).append(algo)
        else:
            grouped.setdefault((name, ours, theirs), []).append(algo)
    lines = [
        BEGIN,
        "",
        "| setting | algorithms | flywheel | RLlib 2.60 | why |",
        "|---|---|---|---|---|",
    ]
    for (name, ours, theirs), algos in grouped.items():
        why = allowance(algos[0], name) or "NOT ALLOWED"
        lines.append(f"| `{name}` | {', '.join(algos)} | `{ours}` | `{theirs}` | {why} |")
    lines += ["", "Settings RLlib 2.60 does not have (their defaults change nothing RLlib does):", ""]
    lines += [f"- `{name}` ({', '.join(algos)}): {FLYWHEEL_ONLY[name]}." for name, algos in only.items()]
    lines += ["", END]
    return "\n".join(lines)


def _docs_with_table() -> str:
    text = DOCS.read_text()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + defaults_table() + text[stop:]


pytestmark = pytest.mark.skipif(
    find_spec("ray") is None, reason="needs the ray wheel (pip install flywheel[test])"
)


def test_every_difference_is_allowed_with_its_reason():
    unexplained = [row for row in comparison() if allowance(row[0], row[1]) is None]
    assert unexplained == [], (
        f"defaults differ from RLlib 2.60's (algorithm, setting, flywheel, RLlib): {unexplained}"
    )


def test_every_allowed_difference_still_differs():
    differing = {(algo, name) for algo, name, _, _ in comparison()}
    stale = [
        (name, algo)
        for (name, algos), _ in ALLOWED_DIFFERENCES.items()
        for algo in algos
        if (algo, name) not in differing
    ]
    assert stale == [], f"these defaults now equal RLlib's: remove them from ALLOWED_DIFFERENCES: {stale}"


def test_same_meaning_values_still_occur():
    rllib = rllib_defaults()
    seen = {
        (name, json.dumps(values[name]["value"]))
        for values in rllib.values()
        for name in values
        if "value" in values[name]
    }
    unused = [key for key in SAME_MEANING if key[:2] not in seen]
    assert unused == []


def test_the_rllib_attribute_names_exist():
    missing = sorted(
        {name for values in rllib_defaults().values() for name, v in values.items() if "missing" in v}
    )
    assert missing == sorted(FLYWHEEL_ONLY)


def test_docs_table_is_current():
    assert DOCS.read_text() == _docs_with_table(), (
        "docs/porting.md's Defaults table is stale. Regenerate it: PYTHONPATH=src python tests/porting/test_rllib_defaults.py"
    )


if __name__ == "__main__":
    DOCS.write_text(_docs_with_table())
    print(f"wrote the Defaults table into {DOCS}")
