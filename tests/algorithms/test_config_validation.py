"""validate(): one ConfigError listing every problem with its fix; schedules; the problem texts."""

import gymnasium as gym
import pytest

from flywheel import AlgorithmConfig, PPOConfig, RLlibCallback
from flywheel.env_runners.external_inference import EnvRunnerServerForExternalInference
from flywheel.errors import ConfigError

SCHEDULE_FIX = "Fix: pass a number or a list of [step, value] pairs such as [[0, 3e-4], [100_000, 1e-5]] to config.training(lr=...)."


def _problems(config):
    with pytest.raises(ConfigError) as info:
        config.validate()
    assert isinstance(info.value, ValueError)
    header, *lines = str(info.value).split("\n")
    count = len(lines)
    assert header == f"Invalid {type(config).__name__} ({count} problem{'s' if count > 1 else ''}):"
    assert all(line.startswith("- ") for line in lines)
    return [line[2:] for line in lines]


def test_valid_configs_pass():
    PPOConfig().environment("CartPole-v1").validate()
    AlgorithmConfig().environment(gym.Env).training(lr=[[0, 1e-3], [1000, 0.0]]).validate()
    PPOConfig().environment(lambda cfg: None).multi_agent(
        policies={"p0": None, "p1": None},
        policy_mapping_fn=lambda agent_id, episode, **kw: "p0",
        policies_to_train=lambda module_id, batch=None: module_id == "p0",
    ).evaluation(evaluation_config=PPOConfig.overrides(explore=False, clip_param=0.1)).validate()


def test_one_error_lists_every_problem_in_order():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=0, batch_mode="truncate")
        .training(minibatch_size=512, train_batch_size_per_learner=256, num_epochs=0, lambda_=1.5)
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda a, e, **kw: "p0", policies_to_train=["p0", "p2"]
        )
    )
    assert _problems(config) == [
        "num_envs_per_env_runner=0 must be an int >= 1. "
        "Fix: pass an int >= 1 to config.env_runners(num_envs_per_env_runner=...).",
        "batch_mode='truncate' is not one of ['truncate_episodes', 'complete_episodes']. "
        "Fix: use one of them, e.g. config.env_runners(batch_mode='truncate_episodes').",
        "num_epochs=0 must be an int >= 1. Fix: pass an int >= 1 to config.training(num_epochs=...).",
        "minibatch_size=512 is larger than train_batch_size_per_learner=256. "
        "Fix: lower minibatch_size or raise train_batch_size_per_learner in config.training().",
        "policies_to_train contains 'p2', which is not in policies ['p0', 'p1']. "
        "Fix: add it to config.multi_agent(policies=...) or remove it from policies_to_train.",
        "lambda_=1.5 must be a number in [0, 1]. Fix: pass a number in [0, 1] to config.training(lambda_=...).",
    ]


@pytest.mark.parametrize(
    ("lr", "problem"),
    [
        ([[10, 1e-3], [20, 1e-4]], "lr=[[10, 0.001], [20, 0.0001]] must start at step 0 (got 10)."),
        (
            [[0, 1e-3], [50, 1e-4], [50, 1e-5]],
            "lr=[[0, 0.001], [50, 0.0001], [50, 1e-05]] has steps that do not strictly increase: [0, 50, 50].",
        ),
        ([[0, 1e-3], [50, -1.0]], "lr=[[0, 0.001], [50, -1.0]] has a value below 0 (-1.0)."),
        ([], "lr=[] is neither a number nor a schedule of [int step, number value] pairs."),
        (
            [[0, 1e-3, 5]],
            "lr=[[0, 0.001, 5]] is neither a number nor a schedule of [int step, number value] pairs.",
        ),
        (
            [[0.5, 1e-3]],
            "lr=[[0.5, 0.001]] is neither a number nor a schedule of [int step, number value] pairs.",
        ),
        (
            [[0, "fast"]],
            "lr=[[0, 'fast']] is neither a number nor a schedule of [int step, number value] pairs.",
        ),
    ],
)
def test_bad_lr_schedules(lr, problem):
    assert _problems(AlgorithmConfig().environment("CartPole-v1").training(lr=lr)) == [
        f"{problem} {SCHEDULE_FIX}"
    ]


def test_lr_number_must_be_positive_and_schedule_tuples_are_fine():
    assert _problems(AlgorithmConfig().environment("CartPole-v1").training(lr=0)) == [
        "lr=0 must be a number > 0. Fix: pass a number > 0 to config.training(lr=...)."
    ]
    AlgorithmConfig().environment("CartPole-v1").training(lr=((0, 1e-3), (100_000, 1e-5))).validate()


def test_ppo_entropy_schedule_and_settings():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(entropy_coeff=[[5, 0.01]], clip_param=0, kl_target=0.0, use_gae="yes", vf_loss_coeff=-1)
    )
    assert _problems(config) == [
        "clip_param=0 must be a number > 0. Fix: pass a number > 0 to config.training(clip_param=...).",
        "vf_loss_coeff=-1 must be a number >= 0. Fix: pass a number >= 0 to config.training(vf_loss_coeff=...).",
        "entropy_coeff=[[5, 0.01]] must start at step 0 (got 5). "
        "Fix: pass a number or a list of [step, value] pairs such as [[0, 3e-4], [100_000, 1e-5]] "
        "to config.training(entropy_coeff=...).",
        "kl_target=0.0 must be a number > 0. Fix: pass a number > 0 to config.training(kl_target=...).",
        "use_gae='yes' must be True or False. Fix: pass a bool to config.training(use_gae=...).",
    ]
    PPOConfig().environment("CartPole-v1").training(entropy_coeff=[[0, 0.01], [10_000, 0.0]]).validate()


def test_environment_problems():
    assert _problems(AlgorithmConfig()) == [
        "env is not set. Fix: call config.environment('CartPole-v1') (or a registered name, Env class or creator)."
    ]
    # A custom runner may have no env (EnvRunnerServerForExternalInference: the env runs elsewhere).
    PPOConfig().env_runners(env_runner_cls=EnvRunnerServerForExternalInference).validate()
    config = AlgorithmConfig().environment(3, env_config=[], clip_rewards=-1)
    assert _problems(config) == [
        "env=3 (int) is not an env id, name, class or creator. Fix: pass a gymnasium id, a name given to "
        "register_env(), an Env subclass or a callable to config.environment().",
        "env_config=[] is not a dict. Fix: pass a dict to config.environment(env_config=...).",
        "clip_rewards=-1 must be None, a bool or a number > 0. Fix: pass e.g. config.environment(clip_rewards=1.0).",
    ]


def test_choices_suggest_the_closest_value():
    config = (
        AlgorithmConfig()
        .environment("CartPole-v1")
        .env_runners(gym_env_vectorize_mode="asinc")
        .training(grad_clip_by="norms")
        .debugging(log_level="info")
    )
    assert _problems(config) == [
        "gym_env_vectorize_mode='asinc' is not one of ['sync', 'async', 'vector_entry_point', 'envpool']. "
        "Fix: use one of them, e.g. config.env_runners(gym_env_vectorize_mode='async').",
        "grad_clip_by='norms' is not one of ['value', 'norm', 'global_norm']. "
        "Fix: use one of them, e.g. config.training(grad_clip_by='norm').",
        "log_level='info' is not one of ['DEBUG', 'INFO', 'WARN', 'WARNING', 'ERROR', 'CRITICAL']. "
        "Fix: use one of them, e.g. config.debugging(log_level='INFO').",
    ]


def test_runner_learner_and_fragment_problems():
    config = (
        AlgorithmConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=-1,
            rollout_fragment_length="big",
            sample_timeout_s=0,
            max_requests_in_flight_per_env_runner=0,
            explore=1,
        )
        .learners(num_learners=1.5, learner_class=object(), learner_connector="piece")
        .training(grad_clip=0)
    )
    assert _problems(config) == [
        "num_env_runners=-1 must be an int >= 0. Fix: pass an int >= 0 to config.env_runners(num_env_runners=...).",
        "rollout_fragment_length='big' must be 'auto' or an int >= 1. "
        "Fix: pass 'auto' or an int >= 1 to config.env_runners(rollout_fragment_length=...).",
        "explore=1 must be True or False. Fix: pass a bool to config.env_runners(explore=...).",
        "sample_timeout_s=0 must be a number > 0 or None. "
        "Fix: pass a number > 0 or None to config.env_runners(sample_timeout_s=...).",
        "max_requests_in_flight_per_env_runner=0 must be an int >= 1. "
        "Fix: pass an int >= 1 to config.env_runners(max_requests_in_flight_per_env_runner=...).",
        "num_learners=1.5 must be an int >= 0. Fix: pass an int >= 0 to config.learners(num_learners=...).",
        f"learner_class={config.learner_class!r} is not a class. "
        "Fix: pass the class itself (not an instance) to config.learners(learner_class=...).",
        "learner_connector='piece' is not callable. Fix: pass a function (or None) to config.learners(learner_connector=...).",
        "grad_clip=0 must be a number > 0 or None. Fix: pass a number > 0 or None to config.training(grad_clip=...).",
    ]


def test_multi_agent_problems():
    assert _problems(AlgorithmConfig().environment("CartPole-v1").multi_agent(policies=[])) == [
        "policies=[] must be a non-empty set/list of module ids or a dict id -> RLModuleSpec. "
        "Fix: pass e.g. config.multi_agent(policies={'p0', 'p1'})."
    ]
    config = (
        AlgorithmConfig()
        .environment("CartPole-v1")
        .multi_agent(policies=["p0", "p1"], count_steps_by="steps")
    )
    assert _problems(config) == [
        "policies=['p0', 'p1'] needs a policy_mapping_fn to know which module acts for which agent. "
        "Fix: pass policy_mapping_fn=lambda agent_id, episode, **kw: <module id> to config.multi_agent().",
        "count_steps_by='steps' is not one of ['env_steps', 'agent_steps']. "
        "Fix: use one of them, e.g. config.multi_agent(count_steps_by='env_steps').",
    ]
    assert _problems(AlgorithmConfig().environment("CartPole-v1").multi_agent(policies_to_train={"p9"})) == [
        "policies_to_train contains 'p9', which is not in policies ['default_policy']. "
        "Fix: add it to config.multi_agent(policies=...) or remove it from policies_to_train."
    ]


def test_module_evaluation_callback_and_reporting_problems():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(rl_module_spec=5, model_config=None)
        .evaluation(evaluation_interval=0, evaluation_config={"explor": False, "zzzz": 1})
        .callbacks(int, on_episode_end=3, on_train_result=[print, 4])
        .reporting(metrics_num_episodes_for_smoothing=0)
        .debugging(seed=-1)
    )
    assert _problems(config) == [
        "rl_module_spec=5 is not an RLModuleSpec. Fix: pass RLModuleSpec(module_class=...) to "
        "config.rl_module(rl_module_spec=...).",
        "model_config=None is not a dict. Fix: pass a dict or a DefaultModelConfig.",
        "evaluation_interval=0 must be an int >= 1 or None. "
        "Fix: pass an int >= 1 or None to config.evaluation(evaluation_interval=...).",
        "evaluation_config has an unknown setting 'explor'. Fix: use a setting name, e.g. 'explore'.",
        "evaluation_config has an unknown setting 'zzzz'. Fix: use a setting name (PPOConfig.setting_names() lists them).",
        "metrics_num_episodes_for_smoothing=0 must be an int >= 1. "
        "Fix: pass an int >= 1 to config.reporting(metrics_num_episodes_for_smoothing=...).",
        "seed=-1 must be an int >= 0 or None. Fix: pass an int >= 0 or None to config.debugging(seed=...).",
        "callbacks_class=<class 'int'> is not an RLlibCallback subclass (nor a callable that makes one, e.g. "
        "functools.partial(MyCallback, arg=...)). Fix: subclass flywheel.RLlibCallback and pass the class "
        "to config.callbacks().",
        f"on_train_result=[{print!r}, 4] is not a function or a list of functions. "
        "Fix: pass a function to config.callbacks(on_train_result=...).",
        "on_episode_end=3 is not a function or a list of functions. "
        "Fix: pass a function to config.callbacks(on_episode_end=...).",
    ]
    PPOConfig().environment("CartPole-v1").callbacks(RLlibCallback, on_episode_end=[print, print]).validate()
