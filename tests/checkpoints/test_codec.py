"""Constructor arguments as plain JSON data: what round-trips, what is refused, what may be pickled."""

import json

import gymnasium as gym
import numpy as np
import pytest

from flywheel import PPOConfig, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.checkpoints import codec
from flywheel.checkpoints.registry import Allowed
from flywheel.errors import CheckpointError


def _round_trip(value, pickles=None, classes=()):
    data = json.loads(json.dumps(codec.encode(value, "arg", pickles)))
    return codec.decode(
        data, "/ckpt", Allowed.of(classes), (lambda: pickles) if pickles is not None else None
    )


def test_plain_values_stay_as_they_are():
    value = {"a": [1, 2.5, "x", None, True], "b": {"c": -3}}
    assert codec.encode(value, "arg") == value
    assert _round_trip(value) == value


def test_tuples_sets_and_non_string_keys_keep_their_types():
    value = {"t": (1, (2, 3)), "s": {3, 1, 2}, "d": {0: "zero", 1.5: "x"}, "tag": {"__tuple__": 1}}
    back = _round_trip(value)
    assert back == value
    assert type(back["t"]) is tuple and type(back["t"][1]) is tuple
    assert codec.encode({3, 1, 2}, "arg") == {"__set__": [1, 2, 3]}


def test_numpy_arrays_and_scalars():
    array = np.arange(6, dtype=np.int16).reshape(2, 3)
    back = _round_trip({"a": array, "s": np.float32(0.1), "inf": np.array([np.inf, -np.inf])})
    assert back["a"].dtype == np.int16 and back["a"].shape == (2, 3)
    np.testing.assert_array_equal(back["a"], array)
    assert type(back["s"]) is np.float32 and back["s"] == np.float32(0.1)
    np.testing.assert_array_equal(back["inf"], [np.inf, -np.inf])


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        gym.spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, np.inf]), (2,), np.float64),
        gym.spaces.Box(0, 255, (84, 84, 4), np.uint8),
        gym.spaces.Discrete(5, start=-2),
        gym.spaces.MultiDiscrete([3, 4], start=[1, 0]),
        gym.spaces.MultiBinary([2, 3]),
        gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,)), "id": gym.spaces.Discrete(3)}),
        gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (1,))]),
    ],
)
def test_spaces_round_trip_exactly(space):
    back = _round_trip(space)
    assert back == space
    assert back.dtype == space.dtype


def test_uniform_box_bounds_are_stored_as_one_number():
    encoded = codec.encode(gym.spaces.Box(0, 255, (84, 84, 4), np.uint8), "arg")["__space__"]
    assert (encoded["low"], encoded["high"], encoded["shape"], encoded["dtype"]) == (
        0,
        255,
        [84, 84, 4],
        "|u1",
    )


def test_importable_classes_functions_and_dataclasses():
    spec = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=gym.spaces.Box(-1, 1, (4,)),
        action_space=gym.spaces.Discrete(2),
        model_config={"fcnet_hiddens": [8]},
    )
    encoded = codec.encode(spec, "spec")
    assert encoded["__dataclass__"] == "flywheel.core.rl_module.spec:RLModuleSpec"
    assert encoded["fields"]["module_class"] == {
        "__import__": "flywheel.algorithms.ppo.rl_module:DefaultPPOTorchRLModule"
    }
    assert _round_trip(spec) == spec  # flywheel's own classes need no passing
    assert _round_trip(np.sign, classes=[np.sign]) is np.sign
    assert _round_trip([json.dumps], classes=[np.sign, json.dumps]) == [json.dumps]
    with pytest.raises(
        CheckpointError, match=r"/ckpt names dumps from json, which is not one of flywheel's classes"
    ):
        _round_trip(json.dumps, classes=[np.sign])


def test_configs_are_their_settings():
    config = PPOConfig().environment("CartPole-v1").training(lr=[[0, 1e-3], [100, 1e-4]], clip_param=0.3)
    encoded = codec.encode(config, "config")
    assert encoded["__config__"] == "flywheel.algorithms.ppo.config:PPOConfig"
    assert encoded["settings"]["policies"] == {"__set__": ["default_policy"]}
    back = _round_trip(config)
    assert type(back) is PPOConfig
    assert back.to_dict() == config.to_dict()


def test_values_without_plain_form_raise_or_go_to_pickles():
    def local_function():
        return 1

    for value, what in [
        (lambda x: x, "defined inside a function or as a lambda"),
        (local_function, "defined inside a function or as a lambda"),
        (object(), "a object"),
        (gym.spaces.Text(5), "a Text space"),
    ]:
        with pytest.raises(codec.NotPlainError, match=what):
            codec.encode({"k": [value]}, "arg")
    pickles = []
    fn = lambda x: x + 1  # noqa: E731
    data = codec.encode({"k": [1, fn]}, "arg", pickles)
    assert data == {"k": [1, {"__pickled__": 0}]} and pickles == [fn]


def test_not_plain_error_names_where():
    config = PPOConfig().env_runners(env_to_module_connector=lambda env, spaces, device: None)
    with pytest.raises(codec.NotPlainError) as info:
        codec.encode(config, "config")
    assert info.value.where == "config.env_to_module_connector"


def test_main_objects_are_paths_without_pickles_and_pickled_with_them(monkeypatch):
    import __main__

    class Piece:
        pass

    Piece.__module__, Piece.__qualname__ = "__main__", "Piece"
    monkeypatch.setattr(__main__, "Piece", Piece, raising=False)
    assert codec.encode(Piece, "arg") == {"__import__": "__main__:Piece"}
    pickles = []
    assert codec.encode(Piece, "arg", pickles) == {"__pickled__": 0}


def test_pickled_references_are_refused_without_a_loader():
    with pytest.raises(
        CheckpointError,
        match=r"/ckpt/rl_module refers to a pickled value, which this load does not unpickle \(unpickling runs code the "
        r"file names\)\. Fix: if you trust the checkpoint, load it with trusted=True\.$",
    ):
        codec.decode({"x": {"__pickled__": 0}}, "/ckpt/rl_module")
    assert codec.pickled_paths(
        {"settings": [{"__pickled__": 0}], "f": {"__tuple__": [{"__pickled__": 1}]}}, "c"
    ) == [
        "c['settings'][0]",
        "c['f'][0]",
    ]


def test_trusted_loads_import_and_name_what_cannot_be_imported():
    trusted = Allowed(trusted=True)
    assert trusted.resolve("json:dumps", "/ckpt") is json.dumps
    with pytest.raises(
        CheckpointError,
        match=r"/ckpt needs Tiny from __main__, which cannot be imported here .*Fix: define it in an importable module",
    ):
        trusted.resolve("__main__:Tiny", "/ckpt")
    with pytest.raises(
        CheckpointError, match=r"needs Gone from no_such_pkg.*Fix: make no_such_pkg importable here"
    ):
        trusted.resolve("no_such_pkg:Gone", "/ckpt")


def test_classes_of_main_match_passed_classes_by_name():
    class Tiny:
        pass

    Tiny.__qualname__ = "Tiny"
    assert Allowed.of([Tiny]).resolve("__main__:Tiny", "/ckpt") is Tiny


@pytest.mark.parametrize(
    "data",
    [
        {"__ndarray__": [1], "dtype": "|O", "shape": [1], "scalar": False},
        {"__ndarray__": [1, 2], "dtype": "<f4", "shape": [-1], "scalar": False},
        {"__space__": {"type": "Box", "low": 0, "high": 1, "shape": [2], "dtype": "|O"}},
        {"__space__": {"type": "Text"}},
        {"__dict__": [[[1, 2], 3]]},
        {"__pickled__": "0"},
        {"__import__": "os:system; rm -rf /"},
        {"__dataclass__": "flywheel.checkpoints.codec:NotPlainError", "fields": {}},
    ],
)
def test_malformed_values_raise_naming_the_file(data):
    with pytest.raises(CheckpointError, match=r"^/ckpt/metadata\.json "):
        codec.decode(data, "/ckpt/metadata.json", load_pickles=lambda: [1])
