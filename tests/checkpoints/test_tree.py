"""`read_tree`: every metadata.json of a checkpoint verified before anything is decoded."""

import json
import os
import zlib

import pytest

from flywheel.checkpoints import io
from flywheel.checkpoints.tree import read_tree, tree_state
from flywheel.errors import CheckpointError

from .test_io import write_checkpoint


def _tree(directory, children=("p0", "p1")):
    """A two-level checkpoint: a parent with state {"n": 1} and one child per name with {"v": name}."""
    directory.mkdir(exist_ok=True)
    checksums = io.write_state(directory, {"n": 1}, owner="Parent")
    for name in children:
        (directory / name).mkdir()
        checksums[f"{name}/{io.METADATA_FILE}"] = write_checkpoint(directory / name, {"v": name})
    metadata = {"class": "a:Parent", "kind": "Parent", "components": list(children), "checksums": checksums}
    io.write_metadata(directory, metadata)
    return directory


def rewrite_metadata(directory, **changes):
    """Edits `directory`'s metadata.json as an attacker would: the marker's and the parent's checksums
    are recomputed, so only the content checks are left to catch it."""
    metadata = json.loads((directory / io.METADATA_FILE).read_text())
    metadata.update(changes)
    data = json.dumps(metadata).encode()
    (directory / io.METADATA_FILE).write_bytes(data)
    (directory / io.COMPLETE_MARKER).write_text(json.dumps({io.MARKER_KEY: zlib.crc32(data)}))
    parent = directory.parent
    if (parent / io.METADATA_FILE).exists():
        parent_metadata = json.loads((parent / io.METADATA_FILE).read_text())
        if directory.name in parent_metadata.get("components", []):
            checksums = {
                **parent_metadata["checksums"],
                f"{directory.name}/{io.METADATA_FILE}": zlib.crc32(data),
            }
            rewrite_metadata(parent, checksums=checksums)


def test_the_tree_holds_what_was_written(tmp_path):
    root = read_tree(_tree(tmp_path / "ckpt"))
    assert list(root.children) == ["p0", "p1"]
    assert root.metadata["format_version"] == io.FORMAT_VERSION == 2
    assert root.at("p1").metadata["kind"] == "Y"
    assert tree_state(root) == {"n": 1, "p0": {"v": "p0"}, "p1": {"v": "p1"}}
    marker = json.loads((tmp_path / "ckpt" / io.COMPLETE_MARKER).read_text())
    assert marker == {"metadata_crc32": zlib.crc32((tmp_path / "ckpt" / io.METADATA_FILE).read_bytes())}
    with pytest.raises(
        CheckpointError, match=r"has no component 'p9': .*ckpt holds a:Parent with the components"
    ):
        root.at("p9")


def test_missing_paths_and_non_checkpoints_raise(tmp_path):
    _tree(tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match=r"No checkpoint at .*nowhere: the path does not exist\.$"):
        read_tree(tmp_path / "nowhere")
    with pytest.raises(
        CheckpointError, match=r"Its parent .*ckpt is a checkpoint with the components \['p0', 'p1'\]"
    ):
        read_tree(tmp_path / "ckpt" / "p9")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(CheckpointError, match=r"is not a flywheel checkpoint: it has no metadata\.json"):
        read_tree(tmp_path)
    with pytest.raises(CheckpointError, match=r"notes\.txt is a file, not a checkpoint"):
        read_tree(tmp_path / "notes.txt")


def test_missing_marker_means_incomplete(tmp_path):
    _tree(tmp_path / "ckpt")
    (tmp_path / "ckpt" / "p1" / io.COMPLETE_MARKER).unlink()
    with pytest.raises(CheckpointError, match=r"ckpt/p1 is incomplete: it has no checkpoint_complete marker"):
        read_tree(tmp_path / "ckpt")


def test_other_format_versions_raise(tmp_path):
    write_checkpoint(tmp_path, {})
    rewrite_metadata(tmp_path, format_version=3, flywheel_version="9.0")
    with pytest.raises(
        CheckpointError,
        match=r"has format version 3 \(written by flywheel 9\.0\); this flywheel reads format version 2",
    ):
        read_tree(tmp_path)
    (tmp_path / io.COMPLETE_MARKER).write_bytes(b"")  # format 1 wrote an empty marker
    rewrite_metadata_bytes = json.loads((tmp_path / io.METADATA_FILE).read_text())
    rewrite_metadata_bytes.update(format_version=1, flywheel_version="0.1.0")
    (tmp_path / io.METADATA_FILE).write_text(json.dumps(rewrite_metadata_bytes))
    with pytest.raises(CheckpointError, match=r"has format version 1 \(written by flywheel 0\.1\.0\)"):
        read_tree(tmp_path)


def test_edited_or_damaged_metadata_is_caught_by_its_checksum(tmp_path):
    _tree(tmp_path / "ckpt")
    file = tmp_path / "ckpt" / "p0" / io.METADATA_FILE
    file.write_text(file.read_text().replace('"x:Y"', '"os:system"'))
    with pytest.raises(
        CheckpointError,
        match=r"ckpt/p0/metadata\.json is corrupted or was edited: its CRC-32 does not match the one in "
        r"checkpoint_complete",
    ):
        read_tree(tmp_path / "ckpt")


def test_a_sub_directory_from_another_checkpoint_is_noticed(tmp_path):
    _tree(tmp_path / "a")
    _tree(tmp_path / "b", children=("p0", "p1"))
    rewrite_metadata(tmp_path / "b" / "p1", flywheel_version="other")
    os.rename(tmp_path / "a" / "p1", tmp_path / "old_p1")
    os.rename(tmp_path / "b" / "p1", tmp_path / "a" / "p1")
    with pytest.raises(
        CheckpointError,
        match=r"a/p1/metadata\.json does not match the CRC-32 that .*a/metadata\.json records for it: .*copied in "
        r"from another checkpoint",
    ):
        read_tree(tmp_path / "a")


@pytest.mark.parametrize("name", ["..", "../../etc", "/etc", "a/b", ".hidden", "", 7, "a\\b"])
def test_component_names_from_a_checkpoint_are_checked(tmp_path, name):
    _tree(tmp_path / "ckpt")
    metadata = json.loads((tmp_path / "ckpt" / io.METADATA_FILE).read_text())
    checksums = {**metadata["checksums"], f"{name}/{io.METADATA_FILE}": 0}
    rewrite_metadata(tmp_path / "ckpt", components=["p0", name], checksums=checksums)
    with pytest.raises(
        CheckpointError, match=r"ckpt/metadata\.json lists the component .*the file is damaged or was edited"
    ):
        read_tree(tmp_path / "ckpt")


def test_duplicate_and_unchecked_components_are_refused(tmp_path):
    _tree(tmp_path / "ckpt")
    rewrite_metadata(tmp_path / "ckpt", components=["p0", "p0"])
    with pytest.raises(CheckpointError, match=r"lists the component 'p0' is listed twice"):
        read_tree(tmp_path / "ckpt")
    metadata = json.loads((tmp_path / "ckpt" / io.METADATA_FILE).read_text())
    checksums = {k: v for k, v in metadata["checksums"].items() if not k.startswith("p1/")}
    rewrite_metadata(tmp_path / "ckpt", components=["p0", "p1"], checksums=checksums)
    with pytest.raises(CheckpointError, match=r"lists the component 'p1' has no checksum"):
        read_tree(tmp_path / "ckpt")


def test_malformed_entries_are_refused(tmp_path):
    write_checkpoint(tmp_path, {})
    rewrite_metadata(tmp_path, components="p0")
    with pytest.raises(CheckpointError, match=r"has no valid 'components' entry \(expected a list\)"):
        read_tree(tmp_path)
    rewrite_metadata(tmp_path, components=[], kind=None)
    with pytest.raises(CheckpointError, match=r"has no valid 'kind' entry \(expected a str\)"):
        read_tree(tmp_path)


def test_symlinked_components_are_refused(tmp_path):
    _tree(tmp_path / "ckpt")
    elsewhere = tmp_path / "elsewhere"
    os.rename(tmp_path / "ckpt" / "p1", elsewhere)
    (tmp_path / "ckpt" / "p1").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(
        CheckpointError, match=r"ckpt/p1 is a symlink; checkpoints hold real sub-directories only"
    ):
        read_tree(tmp_path / "ckpt")


def test_corrupted_json_raises(tmp_path):
    write_checkpoint(tmp_path, {})
    data = b'{"format_version": 2, "cla'
    (tmp_path / io.METADATA_FILE).write_bytes(data)
    (tmp_path / io.COMPLETE_MARKER).write_text(json.dumps({io.MARKER_KEY: zlib.crc32(data)}))
    with pytest.raises(CheckpointError, match=r"metadata\.json is corrupted \(JSONDecodeError"):
        read_tree(tmp_path)
