"""Checkpoints written by an attacker: loading raises and runs nothing the files name.

Each payload would create the `proof` file if it ran (the `proof` fixture asserts it does not
exist). Tampered metadata gets fresh checksums (`rewrite_metadata`), as an attacker would write
them, so what stops each payload is the allow-list, not the integrity check.
"""

import json
import os
import pickle
import subprocess
import sys
import zlib

import pytest
from checkpoints.test_tree import rewrite_metadata

from flywheel import Algorithm, RLModule
from flywheel.checkpoints import io
from flywheel.errors import CheckpointError
from flywheel.inference import load_policy

MODULE = "learner_group/learner/rl_module/default_policy"
PIECE = "env_runner/env_to_module_connector/0_AddObservationsFromEpisodesToBatch"


def _metadata(directory):
    return json.loads((directory / io.METADATA_FILE).read_text())


def _settings_with(ckpt, **settings):
    config = _metadata(ckpt)["ctor_kwargs"]["config"]
    config["settings"].update(settings)
    rewrite_metadata(ckpt, ctor_kwargs={"config": config})


@pytest.fixture
def evil_module(tmp_path, monkeypatch, proof):
    """An importable module whose import creates the proof file (a package with import side effects)."""
    (tmp_path / "evil_mod.py").write_text(f"open({str(proof)!r}, 'w').close()\nclass Evil:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "evil_mod"
    assert "evil_mod" not in sys.modules


def test_a_function_call_hidden_in_a_module_config_is_not_called(ckpt, proof):
    metadata = _metadata(ckpt / MODULE)
    payload = {"__dataclass__": "os:system", "fields": {"command": f"touch {proof}"}}
    rewrite_metadata(ckpt / MODULE, ctor_kwargs={**metadata["ctor_kwargs"], "model_config": {"x": payload}})
    message = r"default_policy/metadata\.json names system from os, which is not one of flywheel's classes"
    with pytest.raises(
        CheckpointError, match=message + r".*Fix: pass it yourself: load_policy\(path, classes="
    ):
        load_policy(ckpt)
    with pytest.raises(CheckpointError, match=message):
        RLModule.from_checkpoint(ckpt / MODULE)


def test_a_class_that_is_not_a_dataclass_is_not_built(ckpt, proof):
    """`subprocess.Popen` passed by the caller is allowed to be named, but never built as a dataclass."""
    payload = {"__dataclass__": "subprocess:Popen", "fields": {"args": ["touch", str(proof)]}}
    rewrite_metadata(ckpt / PIECE, ctor_kwargs={"payload": payload})
    with pytest.raises(
        CheckpointError, match=r"names Popen from subprocess, which is not one of flywheel's classes"
    ):
        load_policy(ckpt)
    with pytest.raises(
        CheckpointError, match=r"names <class 'subprocess\.Popen'> as a dataclass, which it is not"
    ):
        load_policy(ckpt, classes=[subprocess.Popen])


def test_a_payload_in_the_stored_env_config_is_not_called(ckpt, proof):
    _settings_with(
        ckpt, env_config={"x": {"__dataclass__": "os:system", "fields": {"command": f"touch {proof}"}}}
    )
    with pytest.raises(
        CheckpointError, match=r"ckpt/metadata\.json names system from os, which is not one of"
    ):
        Algorithm.from_checkpoint(ckpt)


def test_modules_named_by_a_checkpoint_are_not_imported(ckpt, evil_module):
    _settings_with(ckpt, env={"__import__": "evil_mod:Evil"})
    with pytest.raises(
        CheckpointError, match=r"names Evil from evil_mod, which is not one of flywheel's classes"
    ):
        Algorithm.from_checkpoint(ckpt)
    rewrite_metadata(ckpt / MODULE, **{"class": "evil_mod:Evil"})
    with pytest.raises(CheckpointError, match=r"names Evil from evil_mod"):
        load_policy(ckpt)


def test_a_gymnasium_id_that_imports_a_module_is_refused(ckpt, evil_module):
    _settings_with(ckpt, env="evil_mod:Evil-v0")
    with pytest.raises(
        CheckpointError,
        match=r"names the env of a module that is not imported yet \(evil_mod\); making it would import evil_mod",
    ):
        Algorithm.from_checkpoint(ckpt)


class _Payload:
    """Unpickling it runs `touch <proof>`."""

    def __init__(self, proof):
        self.proof = proof

    def __reduce__(self):
        return os.system, (f"touch {self.proof}",)


def _put_pickle(directory, proof):
    data = pickle.dumps([_Payload(proof)])
    (directory / io.PICKLE_FILE).write_bytes(data)
    return zlib.crc32(data)


def test_the_config_pickle_is_not_unpickled_without_trust(ckpt, proof):
    crc = _put_pickle(ckpt, proof)
    checksums = {**_metadata(ckpt)["checksums"], io.PICKLE_FILE: crc}
    rewrite_metadata(ckpt, checksums=checksums)
    _settings_with(ckpt, env_config={"__pickled__": 0})
    with pytest.raises(CheckpointError, match=r"stores config\.env_config as pickles .*trusted=True"):
        Algorithm.from_checkpoint(ckpt)
    assert load_policy(ckpt, trusted=True).compute_single_action([0.0]) in (0, 1)  # never unpickles


def test_a_pickle_referenced_by_a_module_is_never_unpickled_even_when_trusted(ckpt, proof):
    crc = _put_pickle(ckpt / MODULE, proof)
    metadata = _metadata(ckpt / MODULE)
    rewrite_metadata(
        ckpt / MODULE,
        checksums={**metadata["checksums"], io.PICKLE_FILE: crc},
        ctor_kwargs={**metadata["ctor_kwargs"], "model_config": {"__pickled__": 0}},
    )
    with pytest.raises(
        CheckpointError,
        match=r"refers to a pickled value, which this load does not unpickle \(unpickling runs code the file names\); only components built from an algorithm config store pickles",
    ):
        load_policy(ckpt, trusted=True)


@pytest.mark.parametrize("name", ["../outside", "/tmp", "a/../../outside"])
def test_component_names_cannot_leave_the_checkpoint(ckpt, name):
    (ckpt.parent / "outside").mkdir()
    metadata = _metadata(ckpt)
    checksums = {**metadata["checksums"], f"{name}/{io.METADATA_FILE}": 0}
    rewrite_metadata(ckpt, components=[*metadata["components"], name], checksums=checksums)
    with pytest.raises(CheckpointError, match=rf"lists the component {name!r} is not a plain directory name"):
        load_policy(ckpt)


def test_symlinked_components_and_files_are_refused(ckpt, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    os.rename(ckpt / PIECE, elsewhere)
    os.symlink(elsewhere, ckpt / PIECE)
    with pytest.raises(CheckpointError, match=r"0_AddObservationsFromEpisodesToBatch is a symlink"):
        load_policy(ckpt)


def test_a_special_file_in_place_of_metadata_does_not_hang_the_load(ckpt):
    os.remove(ckpt / MODULE / io.METADATA_FILE)
    os.mkfifo(ckpt / MODULE / io.METADATA_FILE)
    with pytest.raises(CheckpointError, match=r"default_policy/metadata\.json is not a regular file"):
        load_policy(ckpt)


def test_edits_without_new_checksums_are_caught_before_decoding(ckpt, proof):
    file = ckpt / MODULE / io.METADATA_FILE
    file.write_text(file.read_text().replace('"inference_only": false', f'"inference_only": "{proof}"'))
    with pytest.raises(CheckpointError, match=r"default_policy/metadata\.json is corrupted or was edited"):
        load_policy(ckpt)


def test_deeply_nested_metadata_raises_a_checkpoint_error(ckpt):
    depth = 100_000
    nested = '{"__tuple__": [' * depth + "[]" + "]}" * depth
    metadata = {**_metadata(ckpt / PIECE), "ctor_kwargs": {"x": "NESTED"}}
    data = json.dumps(metadata).replace('"NESTED"', nested).encode()
    (ckpt / PIECE / io.METADATA_FILE).write_bytes(data)
    (ckpt / PIECE / io.COMPLETE_MARKER).write_text(json.dumps({io.MARKER_KEY: zlib.crc32(data)}))
    parent = ckpt / PIECE.rpartition("/")[0]
    name = PIECE.rpartition("/")[2]
    rewrite_metadata(
        parent, checksums={**_metadata(parent)["checksums"], f"{name}/{io.METADATA_FILE}": zlib.crc32(data)}
    )
    with pytest.raises(
        CheckpointError,
        match=r"0_AddObservationsFromEpisodesToBatch/metadata\.json is corrupted \(RecursionError",
    ):
        load_policy(ckpt)
