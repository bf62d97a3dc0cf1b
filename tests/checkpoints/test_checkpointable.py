"""`Checkpointable` on small stand-ins: layout, rebuild, restore, component paths and save errors."""

import json
import os
from pathlib import Path

import pytest

from flywheel import Checkpointable
from flywheel.checkpoints import io
from flywheel.checkpoints.checkpointable import select
from flywheel.checkpoints.tree import read_tree, tree_state
from flywheel.errors import CheckpointError


class Counter(Checkpointable):
    def __init__(self, start=0, *, label="c"):
        self.start, self.label, self.count = start, label, start

    def get_state(self, components=None, not_components=None, **kwargs):
        return {"count": self.count}

    def set_state(self, state):
        self.count = state.get("count", self.count)

    def get_ctor_args_and_kwargs(self):
        return (self.start,), {"label": self.label}


class Pair(Checkpointable):
    """Two counters as components plus an own `steps` value."""

    def __init__(self):
        self.left, self.right, self.steps = Counter(1, label="l"), Counter(2, label="r"), 0

    def get_checkpointable_components(self):
        return [("left", self.left), ("right", self.right)]

    def get_state(self, components=None, not_components=None, **kwargs):
        state = {}
        for name, part in self.get_checkpointable_components():
            if select(name, components, not_components)[0]:
                state[name] = part.get_state()
        if select("steps", components, not_components)[0]:
            state["steps"] = self.steps
        return state

    def set_state(self, state):
        for name, part in self.get_checkpointable_components():
            if name in state:
                part.set_state(state[name])
        self.steps = state.get("steps", self.steps)

    def get_ctor_args_and_kwargs(self):
        return (), {}


class Holder(Counter):
    """Takes a value that has no plain form."""

    def __init__(self, fn=None):
        super().__init__()
        self.fn = fn

    def get_ctor_args_and_kwargs(self):
        return (), {"fn": self.fn}


class ConfigBuilt(Holder):
    ctor_args_may_pickle = True


def _pair(left=5, right=7, steps=3):
    pair = Pair()
    pair.left.count, pair.right.count, pair.steps = left, right, steps
    return pair


def test_layout_and_metadata(tmp_path):
    path = _pair().save_to_path(tmp_path / "ckpt")
    assert sorted(os.listdir(path)) == sorted(
        ["left", "right", "metadata.json", "state.msgpack", "state.safetensors", "checkpoint_complete"]
    )
    metadata = json.loads((tmp_path / "ckpt" / "left" / "metadata.json").read_text())
    assert sorted(metadata.pop("checksums")) == ["state.msgpack", "state.safetensors"]
    assert metadata == {
        "format_version": 2,
        "flywheel_version": "0.1.0",
        "class": "checkpoints.test_checkpointable:Counter",
        "kind": "Counter",
        "components": [],
        "ctor_args": [1],
        "ctor_kwargs": {"label": "l"},
    }
    root = json.loads((tmp_path / "ckpt" / "metadata.json").read_text())
    assert root["components"] == ["left", "right"]
    assert sorted(root["checksums"]) == [
        "left/metadata.json",
        "right/metadata.json",
        "state.msgpack",
        "state.safetensors",
    ]
    # The parent's own state leaves out its components' states (they live in the sub-directories).
    assert io.read_state(Path(path), read_tree(path).metadata) == {"steps": 3}
    assert tree_state(read_tree(path)) == {"steps": 3, "left": {"count": 5}, "right": {"count": 7}}


def test_from_checkpoint_rebuilds_and_restores(tmp_path):
    path = _pair().save_to_path(tmp_path / "ckpt")
    pair = Pair.from_checkpoint(path)
    assert (pair.left.count, pair.right.count, pair.steps) == (5, 7, 3)
    counter = Counter.from_checkpoint(os.path.join(path, "right"))
    assert (counter.start, counter.label, counter.count) == (2, "r", 7)
    assert Checkpointable.from_checkpoint(path, classes=[Pair, Counter]).get_state() == pair.get_state()
    with pytest.raises(
        CheckpointError,
        match=r"ckpt/metadata\.json names Pair from checkpoints\.test_checkpointable, which is not one of flywheel's "
        r"classes\. Flywheel does not import what a checkpoint names \(importing runs that module's code\)\. Fix: pass "
        r"it yourself: Checkpointable\.from_checkpoint\(path, classes=\[Pair\]\) \(classes= also takes functions\); or, "
        r"if you trust this checkpoint, Checkpointable\.from_checkpoint\(path, trusted=True\) imports it\.$",
    ):
        Checkpointable.from_checkpoint(path)
    assert Checkpointable.from_checkpoint(path, trusted=True).get_state() == pair.get_state()


def test_restore_from_path_whole_and_one_component(tmp_path):
    path = _pair().save_to_path(tmp_path / "ckpt")
    pair = Pair()
    pair.restore_from_path(path)
    assert pair.get_state() == {"left": {"count": 5}, "right": {"count": 7}, "steps": 3}
    other = Pair()
    other.restore_from_path(os.path.join(path, "right"), component="right")
    assert other.get_state() == {"left": {"count": 1}, "right": {"count": 7}, "steps": 0}


def test_unknown_component_path_raises(tmp_path):
    path = _pair().save_to_path(tmp_path / "ckpt")
    with pytest.raises(
        CheckpointError, match=r"Pair has no component 'left/x': at left the components are \[\]"
    ):
        Pair().restore_from_path(path, component="left/x")
    with pytest.raises(
        CheckpointError,
        match=r"no component 'middle': at the top level the components are \['left', 'right'\]",
    ):
        Pair().restore_from_path(path, component="middle")


def test_restore_checks_the_kind_of_the_checkpoint(tmp_path):
    path = _pair().save_to_path(tmp_path / "ckpt")
    pair = Pair()
    with pytest.raises(
        CheckpointError,
        match=r"Cannot restore .*ckpt/left into Pair: it holds Counter \(kind Counter\), expected a checkpoint of kind "
        r"Pair\. Fix: pass the component it belongs to, e\.g\. restore_from_path\(path, component='left'\) \(components "
        r"of kind Counter: \['left', 'right'\]\)\.$",
    ):
        pair.restore_from_path(os.path.join(path, "left"))
    with pytest.raises(
        CheckpointError, match=r"it holds Pair \(kind Pair\), expected a checkpoint of kind Counter"
    ):
        pair.restore_from_path(path, component="left")
    assert pair.get_state() == Pair().get_state()


def test_from_checkpoint_of_the_wrong_class_raises(tmp_path):
    path = _pair().save_to_path(tmp_path / "ckpt")
    with pytest.raises(
        CheckpointError,
        match=r"holds checkpoints\.test_checkpointable:Pair \(kind Pair\), which is not Counter or a subclass "
        r"of it\. Fix: load it with Pair\.from_checkpoint\(\), or pass its sub-directory holding a Counter \(left, "
        r"right\)\.$",
    ):
        Counter.from_checkpoint(path)


def test_not_plain_ctor_argument_fails_the_save_and_keeps_the_old_checkpoint(tmp_path):
    target = tmp_path / "ckpt"
    Holder(fn=len).save_to_path(target)
    before = (target / "metadata.json").read_text()
    with pytest.raises(
        CheckpointError,
        match=r"Cannot save Holder \(at Holder\): its constructor argument fn is checkpoints\.test_checkpointable\.test_not_plain_\w+\.<locals>\.<lambda>, defined inside "
        r"a function or as a lambda, so not importable, which a checkpoint cannot record as plain data\. Fix: pass "
        r"plain data",
    ):
        Holder(fn=lambda: 1).save_to_path(target)
    assert (target / "metadata.json").read_text() == before
    assert Holder.from_checkpoint(target, classes=[len]).fn is len
    assert os.listdir(tmp_path) == ["ckpt"]


def test_config_built_components_pickle_what_has_no_plain_form(tmp_path):
    path = ConfigBuilt(fn=lambda x: x * 3).save_to_path(tmp_path / "ckpt")
    assert os.path.exists(os.path.join(path, io.PICKLE_FILE))
    assert json.loads((tmp_path / "ckpt" / "metadata.json").read_text())["ctor_kwargs"] == {
        "fn": {"__pickled__": 0}
    }
    with pytest.raises(
        CheckpointError,
        match=r"ckpt/metadata\.json stores fn as pickles \(lambdas, closures, or classes defined in __main__ or inside a "
        r"function\)\. Flywheel unpickles only when told the checkpoint is trusted, because unpickling runs code the "
        r"file chooses\. Fix: if you trust this checkpoint, ConfigBuilt\.from_checkpoint\(path, trusted=True\)\.$",
    ):
        ConfigBuilt.from_checkpoint(path)
    assert ConfigBuilt.from_checkpoint(path, trusted=True).fn(2) == 6


def test_component_names_must_be_directory_names(tmp_path):
    pair = Pair()
    pair.get_checkpointable_components = lambda: [("../up", pair.left)]
    with pytest.raises(
        CheckpointError, match=r"Cannot save Pair: its component name '\.\./up' is not a plain directory name"
    ):
        pair.save_to_path(tmp_path / "ckpt")
    pair.get_checkpointable_components = lambda: [("x", pair.left), ("x", pair.right)]
    with pytest.raises(CheckpointError, match=r"Cannot save Pair: its component name 'x' is used twice"):
        pair.save_to_path(tmp_path / "ckpt")


def test_select_handles_nested_paths():
    assert select("a", None, None) == (True, None, None)
    assert select("a", ["a"], None) == (True, None, None)
    assert select("a", "b", None) == (False, None, None)
    assert select("a", ["a/x", "a/y/z", "b"], None) == (True, ["x", "y/z"], None)
    assert select("a", None, ["a"]) == (False, None, None)
    assert select("a", None, "a/x") == (True, None, ["x"])
