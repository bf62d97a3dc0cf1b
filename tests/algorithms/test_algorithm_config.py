"""AlgorithmConfig: section methods, typos, freezing, copies, dicts, evaluation config, fragment length."""

import dataclasses
import pickle

import pytest

from flywheel import AlgorithmConfig, PPOConfig
from flywheel.algorithms.algorithm_config import FROZEN_MESSAGE
from flywheel.errors import ConfigError

SECTION_KEYWORDS = {
    "environment": {
        "env",
        "env_config",
        "observation_space",
        "action_space",
        "clip_rewards",
        "normalize_actions",
        "clip_actions",
        "env_wrappers",
        "render_env",
        "disable_env_checking",
    },
    "env_runners": {
        "num_env_runners",
        "num_envs_per_env_runner",
        "gym_env_vectorize_mode",
        "rollout_fragment_length",
        "batch_mode",
        "explore",
        "env_to_module_connector",
        "module_to_env_connector",
        "add_default_connectors_to_env_to_module_pipeline",
        "add_default_connectors_to_module_to_env_pipeline",
        "episode_lookback_horizon",
        "sample_timeout_s",
        "max_requests_in_flight_per_env_runner",
        "num_cpus_per_env_runner",
        "normalize_rewards",
        "env_runner_cls",
        "num_gpus_per_env_runner",
        "create_env_on_local_worker",
        "episodes_to_numpy",
    },
    "learners": {
        "num_learners",
        "num_cpus_per_learner",
        "num_gpus_per_learner",
        "learner_class",
        "learner_connector",
        "add_default_connectors_to_learner_pipeline",
        "learner_config_dict",
        "num_aggregator_actors_per_learner",
    },
    "training": {
        "gamma",
        "lr",
        "adam_epsilon",
        "grad_clip",
        "grad_clip_by",
        "train_batch_size",
        "train_batch_size_per_learner",
        "minibatch_size",
        "num_epochs",
        "shuffle_batch_per_epoch",
    },
    "multi_agent": {"policies", "policy_mapping_fn", "policies_to_train", "count_steps_by"},
    "resources": {"num_cpus_for_main_process", "placement_strategy"},
    "rl_module": {"rl_module_spec", "model_config"},
    "evaluation": {
        "evaluation_interval",
        "evaluation_duration",
        "evaluation_duration_unit",
        "evaluation_num_env_runners",
        "evaluation_config",
        "evaluation_parallel_to_training",
        "evaluation_force_reset_envs_before_iteration",
        "custom_evaluation_function",
        "evaluation_auto_duration_min_env_steps_per_sample",
        "evaluation_auto_duration_max_env_steps_per_sample",
    },
    "fault_tolerance": {
        "restart_failed_env_runners",
        "ignore_env_runner_failures",
        "max_num_env_runner_restarts",
        "delay_between_env_runner_restarts_s",
        "restart_failed_sub_environments",
    },
    "callbacks": {
        "callbacks_class",
        "on_algorithm_init",
        "on_train_result",
        "on_episode_created",
        "on_episode_start",
        "on_episode_step",
        "on_episode_end",
        "on_sample_end",
        "on_environment_created",
        "on_evaluate_start",
        "on_evaluate_end",
        "on_checkpoint_loaded",
    },
    "reporting": {
        "metrics_num_episodes_for_smoothing",
        "min_time_s_per_iteration",
        "min_sample_timesteps_per_iteration",
        "log_gradients",
    },
    "debugging": {"seed", "log_level", "log_sys_usage"},
}

DEFAULTS = {
    "env": None,
    "env_config": {},
    "gamma": 0.99,
    "lr": 1e-3,
    "grad_clip": None,
    "grad_clip_by": "global_norm",
    "train_batch_size": 4000,
    "train_batch_size_per_learner": None,
    "minibatch_size": 128,
    "num_epochs": 1,
    "shuffle_batch_per_epoch": True,
    "num_env_runners": 0,
    "num_envs_per_env_runner": 1,
    "gym_env_vectorize_mode": "sync",
    "rollout_fragment_length": "auto",
    "batch_mode": "truncate_episodes",
    "explore": True,
    "episode_lookback_horizon": 1,
    "sample_timeout_s": 60.0,
    "max_requests_in_flight_per_env_runner": 1,
    "num_cpus_per_env_runner": 1,
    "num_learners": 0,
    "num_cpus_per_learner": 1,
    "num_gpus_per_learner": 0,
    "learner_config_dict": {},
    "model_config": {},
    "metrics_num_episodes_for_smoothing": 100,
    "min_time_s_per_iteration": 0,
    "min_sample_timesteps_per_iteration": 0,
    "evaluation_interval": None,
    "evaluation_duration": 10,
    "evaluation_duration_unit": "episodes",
    "evaluation_num_env_runners": 0,
    "evaluation_config": None,
    "restart_failed_env_runners": True,
    "ignore_env_runner_failures": False,
    "max_num_env_runner_restarts": 1000,
    "delay_between_env_runner_restarts_s": 60.0,
    "restart_failed_sub_environments": False,
    "policies": {"default_policy"},
    "policy_mapping_fn": None,
    "policies_to_train": None,
    "count_steps_by": "env_steps",
    "seed": None,
    "log_level": "WARN",
    "normalize_actions": True,
    "clip_actions": False,
    "clip_rewards": None,
    "disable_env_checking": False,
    "callbacks_class": None,
    "in_evaluation": False,
}


def test_defaults():
    config = AlgorithmConfig()
    assert {name: getattr(config, name) for name in DEFAULTS} == DEFAULTS


def test_sections_own_exactly_the_api_keywords():
    for section, keywords in SECTION_KEYWORDS.items():
        assert {n for n in AlgorithmConfig.setting_names() if AlgorithmConfig.section_of(n) == section} == (
            keywords
        ), section
    assert AlgorithmConfig.section_of("in_evaluation") is None
    assert (
        AlgorithmConfig.section_of("clip_param") is None and PPOConfig.section_of("clip_param") == "training"
    )


@pytest.mark.parametrize("section", sorted(SECTION_KEYWORDS))
def test_each_section_sets_exactly_its_keywords(section):
    config = AlgorithmConfig()
    before = config.to_dict()
    marker = object()
    returned = getattr(config, section)(**dict.fromkeys(SECTION_KEYWORDS[section], marker))
    assert returned is config
    after = config.to_dict()
    changed = {name for name in after if after[name] is not before[name] and after[name] != before[name]}
    assert changed == SECTION_KEYWORDS[section]
    assert all(getattr(config, name) is marker for name in SECTION_KEYWORDS[section])


def test_section_changes_only_passed_keywords_and_none_is_a_value():
    config = AlgorithmConfig().env_runners(num_envs_per_env_runner=8, rollout_fragment_length=50)
    config.env_runners(num_envs_per_env_runner=4)
    assert (config.num_envs_per_env_runner, config.rollout_fragment_length) == (4, 50)
    config.training(grad_clip=0.5).training(lr=0.1)
    assert config.grad_clip == 0.5
    config.training(grad_clip=None)
    assert config.grad_clip is None


def test_positional_env_and_callbacks_class():
    from flywheel import RLlibCallback

    config = AlgorithmConfig().environment("CartPole-v1", env_config={"a": 1})
    assert (config.env, config.env_config) == ("CartPole-v1", {"a": 1})
    config.environment(clip_actions=True)
    assert config.env == "CartPole-v1"
    config.callbacks(RLlibCallback).callbacks(on_episode_end=print)
    assert (config.callbacks_class, config.on_episode_end) == (RLlibCallback, print)


def test_typo_names_the_closest_keyword():
    with pytest.raises(
        TypeError,
        match=r"^PPOConfig.training\(\) got an unexpected keyword 'lamda'. Did you mean 'lambda_'\?$",
    ):
        PPOConfig().training(lamda=0.9)
    with pytest.raises(
        TypeError,
        match=r"^AlgorithmConfig.env_runners\(\) got an unexpected keyword 'num_envs_per_runner'. "
        r"Did you mean 'num_envs_per_env_runner'\?$",
    ):
        AlgorithmConfig().env_runners(num_envs_per_runner=4)


def test_typo_without_close_match_lists_the_section_keywords():
    with pytest.raises(
        TypeError,
        match=r"^AlgorithmConfig.debugging\(\) got an unexpected keyword 'verbose'. "
        r"Valid keywords: 'seed', 'log_level', 'log_sys_usage'.$",
    ):
        AlgorithmConfig().debugging(verbose=1)


def test_keyword_of_another_section_is_rejected_and_nothing_is_set():
    config = AlgorithmConfig()
    with pytest.raises(TypeError, match=r"training\(\) got an unexpected keyword 'num_env_runners'"):
        config.training(lr=0.5, num_env_runners=2)
    assert config.lr == 1e-3
    with pytest.raises(
        TypeError, match=r"AlgorithmConfig.training\(\) got an unexpected keyword 'clip_param'"
    ):
        AlgorithmConfig().training(clip_param=0.3)


def test_frozen_config_rejects_attribute_sets_and_section_calls():
    config = PPOConfig().environment("CartPole-v1")
    config.freeze()
    assert config.is_frozen
    with pytest.raises(ConfigError, match=r"^This config is frozen \(it belongs to a built algorithm\). "):
        config.lr = 0.1
    with pytest.raises(ConfigError) as info:
        config.training()
    assert str(info.value) == FROZEN_MESSAGE
    with pytest.raises(ConfigError, match="frozen"):
        config.update_from_dict({"lr": 0.1})
    assert config.lr == 5e-5


def test_copy_is_independent_and_editable():
    config = (
        PPOConfig().environment("CartPole-v1", env_config={"size": [1, 2]}).rl_module(model_config={"h": 1})
    )
    config.freeze()
    duplicate = config.copy()
    assert not duplicate.is_frozen and duplicate == config
    duplicate.env_config["size"].append(3)
    duplicate.model_config["h"] = 2
    duplicate.training(lr=0.5)
    assert config.env_config == {"size": [1, 2]} and config.model_config == {"h": 1} and config.lr == 5e-5
    assert config.copy(copy_frozen=True).is_frozen
    assert not AlgorithmConfig().copy(copy_frozen=True).is_frozen


def test_copy_shares_classes_and_functions():
    def creator(env_config):
        return None

    config = AlgorithmConfig().environment(creator).callbacks(on_episode_end=[creator])
    duplicate = config.copy()
    assert duplicate.env is creator and duplicate.on_episode_end[0] is creator
    assert duplicate.on_episode_end is not config.on_episode_end


def test_to_dict_from_dict_round_trip():
    def mapping(agent_id, episode, **kw):
        return "p0"

    config = (
        PPOConfig()
        .environment("CartPole-v1", env_config={"x": 1})
        .training(lr=[[0, 1e-3], [100, 1e-4]], lambda_=0.9, entropy_coeff=0.01)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=mapping, policies_to_train=["p0"])
        .evaluation(evaluation_interval=2, evaluation_config=PPOConfig.overrides(explore=False))
    )
    as_dict = config.to_dict()
    assert set(as_dict) == set(PPOConfig.setting_names())
    assert as_dict["lambda_"] == 0.9 and as_dict["policy_mapping_fn"] is mapping
    assert as_dict["lr"] == [[0, 1e-3], [100, 1e-4]] and as_dict["lr"] is not config.lr
    restored = PPOConfig.from_dict(as_dict)
    assert type(restored) is PPOConfig and restored == config and restored.to_dict() == as_dict
    as_dict["env_config"]["x"] = 2
    assert config.env_config == {"x": 1} and restored.env_config == {"x": 1}


def test_from_dict_partial_and_unknown_key():
    config = PPOConfig.from_dict({"lr": 0.01})
    assert (config.lr, config.num_epochs) == (0.01, 30)
    with pytest.raises(
        TypeError, match=r"^PPOConfig.from_dict\(\) got an unexpected key 'lamda'. Did you mean 'lambda_'\?$"
    ):
        PPOConfig.from_dict({"lamda": 0.9})


def test_config_pickles_with_frozen_state():
    config = PPOConfig().environment("CartPole-v1")
    config.freeze()
    restored = pickle.loads(pickle.dumps(config))
    assert restored == config and restored.is_frozen


def test_overrides_checks_keys():
    assert AlgorithmConfig.overrides(explore=False, num_envs_per_env_runner=2) == {
        "explore": False,
        "num_envs_per_env_runner": 2,
    }
    with pytest.raises(
        TypeError,
        match=r"^AlgorithmConfig.overrides\(\) got an unexpected keyword 'explor'. Did you mean 'explore'\?$",
    ):
        AlgorithmConfig.overrides(explor=False)
    with pytest.raises(
        TypeError, match=r"AlgorithmConfig.overrides\(\) got an unexpected keyword 'clip_param'"
    ):
        AlgorithmConfig.overrides(clip_param=0.1)
    assert PPOConfig.overrides(clip_param=0.1) == {"clip_param": 0.1}


def test_evaluation_config_object():
    config = (
        PPOConfig()
        .env_runners(num_env_runners=3, explore=True)
        .evaluation(
            evaluation_num_env_runners=1, evaluation_config={"explore": False, "num_envs_per_env_runner": 4}
        )
    )
    config.freeze()
    eval_config = config.get_evaluation_config_object()
    assert type(eval_config) is PPOConfig and not eval_config.is_frozen
    assert (eval_config.explore, eval_config.num_envs_per_env_runner, eval_config.num_env_runners) == (
        False,
        4,
        1,
    )
    assert eval_config.in_evaluation and not config.in_evaluation
    assert (config.explore, config.num_env_runners) == (True, 3)
    assert AlgorithmConfig().get_evaluation_config_object().to_dict() == {
        **AlgorithmConfig().to_dict(),
        "in_evaluation": True,
    }


@pytest.mark.parametrize(
    ("batch", "learners", "runners", "envs", "expected"),
    [
        (4000, 0, 0, 1, 4000),
        (4000, 0, 0, 8, 500),
        (4000, 0, 3, 1, 1334),
        (2500, 0, 4, 3, 209),
        (1000, 2, 2, 3, 334),
    ],
)
def test_auto_rollout_fragment_length(batch, learners, runners, envs, expected):
    config = AlgorithmConfig().training(train_batch_size_per_learner=batch).learners(num_learners=learners)
    config.env_runners(num_env_runners=runners, num_envs_per_env_runner=envs)
    assert config.get_rollout_fragment_length() == expected
    assert config.get_rollout_fragment_length(worker_index=runners) == expected


def test_fixed_rollout_fragment_length_and_total_batch():
    config = AlgorithmConfig().env_runners(rollout_fragment_length=64).learners(num_learners=2)
    assert config.get_rollout_fragment_length(worker_index=1) == 64
    # RLlib's meaning: train_batch_size is the total, split over the learners ...
    assert config.total_train_batch_size == 4000 and config.learner_train_batch_size == 2000
    # ... unless train_batch_size_per_learner is given.
    config.training(train_batch_size_per_learner=3000, train_batch_size=10)
    assert config.total_train_batch_size == 6000 and config.learner_train_batch_size == 3000


@pytest.mark.parametrize(
    ("learners", "line"),
    [
        (
            0,
            "minibatch_size=128 is larger than train_batch_size=100. Fix: lower minibatch_size or raise "
            "train_batch_size in config.training().",
        ),
        (
            2,
            "minibatch_size=128 is larger than train_batch_size / num_learners=50. Fix: lower minibatch_size "
            "or raise train_batch_size in config.training().",
        ),
    ],
)
def test_minibatch_larger_than_train_batch_size_names_train_batch_size(learners, line):
    config = (
        PPOConfig().environment("CartPole-v1").training(train_batch_size=100).learners(num_learners=learners)
    )
    with pytest.raises(ConfigError) as info:
        config.validate()
    assert str(info.value).splitlines()[1:] == [f"- {line}"]


def test_is_multi_agent():
    assert not AlgorithmConfig().is_multi_agent
    assert AlgorithmConfig().multi_agent(policies={"p0", "p1"}).is_multi_agent
    assert AlgorithmConfig().multi_agent(policies={"default_policy": None}).policies == {
        "default_policy": None
    }
    assert not AlgorithmConfig().multi_agent(policies={"default_policy": None}).is_multi_agent
    assert (
        AlgorithmConfig()
        .multi_agent(policy_mapping_fn=lambda agent_id, episode, **kw: "default_policy")
        .is_multi_agent
    )


class _RecordingAlgo:
    def __init__(self, *, config):
        self.config = config


def test_build_algo_validates_then_builds_on_a_frozen_copy():
    config = PPOConfig(algo_class=_RecordingAlgo).environment("CartPole-v1")
    algo = config.build_algo()
    assert isinstance(algo, _RecordingAlgo)
    assert algo.config is not config and algo.config == config
    assert algo.config.is_frozen and not config.is_frozen
    with pytest.raises(ConfigError, match="frozen"):
        algo.config.lr = 0.1
    config.training(lr=0.1)  # the user's config stays editable
    with pytest.raises(ConfigError, match=r"^Invalid PPOConfig \(1 problem\):\n- num_epochs=0 "):
        config.training(num_epochs=0).build_algo()


def test_algo_class_defaults_and_setter():
    config = AlgorithmConfig()
    config.algo_class = _RecordingAlgo
    assert config.algo_class is _RecordingAlgo
    assert config.copy().algo_class is _RecordingAlgo


def test_repr_shows_changed_settings():
    assert repr(PPOConfig().environment("CartPole-v1").training(lambda_=0.9)) == (
        "PPOConfig(env='CartPole-v1', lambda_=0.9)"
    )


def test_every_setting_is_documented_and_a_dataclass_field():
    import ast
    import inspect

    from flywheel.algorithms import config_settings
    from flywheel.algorithms.ppo import config as ppo_config

    documented = set()
    for module in (config_settings, ppo_config):
        body = ast.parse(inspect.getsource(module))
        for node in ast.walk(body):
            if isinstance(node, ast.ClassDef):
                for item, after in zip(node.body, node.body[1:]):
                    if isinstance(item, ast.AnnAssign) and isinstance(after, ast.Expr):
                        documented.add(item.target.id)
    assert set(PPOConfig.setting_names()) <= documented
    assert {f.name for f in dataclasses.fields(PPOConfig)} == set(PPOConfig.setting_names())
