"""Callbacks: the no-op base, active hooks, and build_callbacks() dispatch to class and function hooks."""

import inspect
import pickle

import pytest

from flywheel import AlgorithmConfig, RLlibCallback
from flywheel.callbacks import HOOK_NAMES, make_callbacks

EPISODE_KEYWORDS = ["episode", "env_runner", "metrics_logger", "env", "env_index", "rl_module", "kwargs"]
SIGNATURES = {
    "on_algorithm_init": ["algorithm", "metrics_logger", "kwargs"],
    "on_train_result": ["algorithm", "metrics_logger", "result", "kwargs"],
    "on_episode_created": EPISODE_KEYWORDS,
    "on_episode_start": EPISODE_KEYWORDS,
    "on_episode_step": EPISODE_KEYWORDS,
    "on_episode_end": EPISODE_KEYWORDS,
    "on_sample_end": ["env_runner", "metrics_logger", "samples", "kwargs"],
    "on_environment_created": ["env_runner", "metrics_logger", "env", "env_context", "kwargs"],
    "on_evaluate_start": ["algorithm", "metrics_logger", "kwargs"],
    "on_evaluate_end": ["algorithm", "metrics_logger", "evaluation_metrics", "kwargs"],
    "on_checkpoint_loaded": ["algorithm", "kwargs"],
}


class Recorder(RLlibCallback):
    def __init__(self):
        self.calls = []

    def on_episode_end(self, *, episode, metrics_logger=None, **kwargs):
        self.calls.append(("class", episode, sorted(kwargs)))

    def on_train_result(self, *, algorithm, result=None, **kwargs):
        result["from_class"] = True


def test_hook_names_and_keyword_only_signatures():
    assert tuple(SIGNATURES) == HOOK_NAMES
    for name, params in SIGNATURES.items():
        parameters = inspect.signature(getattr(RLlibCallback, name)).parameters
        assert list(parameters)[1:] == params, name
        assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in list(parameters.values())[1:]), name


def test_base_hooks_are_no_ops_and_inactive():
    callback = RLlibCallback()
    assert callback.active_hooks == frozenset()
    assert callback.on_episode_step(episode=1, env_runner=None, metrics_logger=None, extra=2) is None
    recorder = Recorder()
    assert recorder.active_hooks == {"on_episode_end", "on_train_result"}
    assert recorder.active_hooks is recorder.active_hooks  # cached: runners may check it every step


def test_build_callbacks_without_anything_is_an_inactive_base():
    callback = AlgorithmConfig().build_callbacks()
    assert type(callback) is RLlibCallback and callback.active_hooks == frozenset()


def test_class_hook_runs_then_each_function_hook_with_the_same_keywords():
    order = []
    config = AlgorithmConfig().callbacks(
        Recorder,
        on_episode_end=[
            lambda episode, metrics_logger, **kw: order.append(("fn1", episode, metrics_logger)),
            lambda episode, **kw: order.append(("fn2", episode, sorted(kw))),
        ],
        on_episode_start=lambda episode, **kw: order.append(("start", episode)),
    )
    callback = config.build_callbacks()
    assert isinstance(callback, Recorder)
    assert callback.active_hooks == {"on_episode_end", "on_episode_start", "on_train_result"}
    callback.on_episode_end(
        episode="ep", env_runner="r", metrics_logger="m", env="e", env_index=0, rl_module="mod"
    )
    callback.on_episode_start(episode="ep2", env_runner="r")
    assert callback.calls == [("class", "ep", ["env", "env_index", "env_runner", "rl_module"])]
    assert order == [
        ("fn1", "ep", "m"),
        ("fn2", "ep", ["env", "env_index", "env_runner", "metrics_logger", "rl_module"]),
        ("start", "ep2"),
    ]


def test_function_hook_alone_and_class_state_shared():
    results = []
    config = AlgorithmConfig().callbacks(on_train_result=lambda result, **kw: results.append(result["i"]))
    callback = config.build_callbacks()
    assert callback.active_hooks == {"on_train_result"}
    callback.on_train_result(algorithm=None, metrics_logger=None, result={"i": 7})
    assert results == [7]

    config.callbacks(Recorder)
    result = {"i": 8}
    config.build_callbacks().on_train_result(algorithm=None, result=result)
    assert result["from_class"] is True and results == [7, 8]


def test_each_build_gives_a_fresh_instance():
    config = AlgorithmConfig().callbacks(Recorder, on_episode_end=lambda **kw: None)
    first, second = config.build_callbacks(), config.build_callbacks()
    first.on_episode_end(episode=1)
    assert first.calls and not second.calls
    assert Recorder.on_episode_end is not RLlibCallback.on_episode_end  # class untouched


def _record(**kwargs):
    _record.seen.append(kwargs["episode"])


_record.seen = []


def test_merged_callbacks_pickle():
    callback = make_callbacks(Recorder, {"on_episode_end": [_record, _record]})
    restored = pickle.loads(pickle.dumps(callback))
    restored.on_episode_end(episode=5)
    assert restored.calls == [("class", 5, [])] and _record.seen == [5, 5]


def test_hook_typo_in_config_names_the_closest():
    with pytest.raises(
        TypeError,
        match=r"^AlgorithmConfig.callbacks\(\) got an unexpected keyword 'on_episode_ends'. Did you mean 'on_episode_end'\?$",
    ):
        AlgorithmConfig().callbacks(on_episode_ends=print)


class Threshold(RLlibCallback):
    def __init__(self, threshold=0.5):
        self.threshold = threshold


def test_a_partial_of_a_subclass_is_a_callbacks_class_as_in_rllib():
    from functools import partial

    config = AlgorithmConfig().environment("CartPole-v1").callbacks(partial(Threshold, threshold=0.95))
    config.validate()
    callback = config.build_callbacks()
    assert isinstance(callback, Threshold) and callback.threshold == 0.95


def test_a_callable_that_makes_no_callback_is_refused_naming_what_it_made():
    from flywheel.errors import ConfigError

    with pytest.raises(ConfigError, match=r"made 3, not an RLlibCallback"):
        make_callbacks(lambda: 3, {})
