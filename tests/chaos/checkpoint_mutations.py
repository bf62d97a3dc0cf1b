"""Random damage to a checkpoint's files, as hypothesis draws it: byte flips, truncations, deletions,
edits of metadata.json values, and optionally fresh checksums afterwards ("resealed": what a hand
edit with recomputed checksums, or damage the CRC-32 misses, leaves for the decoders to catch)."""

import contextlib
import json
import shutil
import zlib
from pathlib import Path

from hypothesis import strategies as st

from flywheel.checkpoints import io

# Values a damaged or hand-edited metadata.json may hold, tagged payloads that would run code among them.
PAYLOADS = [
    {"__import__": "os:system"},
    {"__dataclass__": "os:system", "fields": {"command": "echo pwned"}},
    {"__config__": "subprocess:Popen", "settings": {"args": ["echo", "pwned"]}},
    {"__pickled__": 0},
    {"__space__": {"type": "Box", "low": 0, "high": 1, "shape": [-1], "dtype": "<f4"}},
    {"__ndarray__": [1, 2], "dtype": "|O", "shape": [2], "scalar": False},
    {"__tuple__": 3},
]
_LEAVES = (
    st.none()
    | st.booleans()
    # Small ints, or ones too big for any tensor: a mid-size width (2**31) in model_config would build a
    # module of gigabytes (a known cost of loading untrusted checkpoints, see docs/concepts/checkpoints.md).
    | st.integers(-3, 64)
    | st.sampled_from([2**63, 2**70, -(2**63)])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(PAYLOADS)
)
JSON_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def files_read_by(load) -> set[Path]:
    """The checkpoint files a clean `load()` reads (every file it depends on)."""
    read: set[Path] = set()
    original = io.read_file

    def recording(path):
        read.add(Path(path))
        return original(path)

    io.read_file = recording
    try:
        load()
    finally:
        io.read_file = original
    return read


def damage(data: st.DataObject, root: Path, targets: list[Path]) -> list[str]:
    """Applies 1-3 random mutations to `targets` (files under `root`); returns what was done
    ("unchanged" last when the mutations cancelled out, e.g. the same bit flipped twice)."""
    before = {path: path.read_bytes() for path in targets}
    done = []
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        existing = [path for path in targets if path.exists()]
        if not existing:
            break
        path = data.draw(st.sampled_from(existing), label="file")
        kind = data.draw(st.sampled_from(["flip", "truncate", "delete", "delete_dir", "edit"]), label="kind")
        done.append(f"{kind} {path.relative_to(root)}")
        if kind == "flip":
            raw = bytearray(path.read_bytes())
            if raw:
                at = data.draw(st.integers(0, len(raw) - 1), label="at")
                raw[at] ^= data.draw(st.integers(1, 255), label="mask")
            path.write_bytes(bytes(raw))
        elif kind == "truncate":
            raw = path.read_bytes()
            path.write_bytes(raw[: data.draw(st.integers(0, max(len(raw) - 1, 0)), label="length")])
        elif kind == "delete":
            path.unlink()
        elif kind == "delete_dir":
            if path.parent != root:
                shutil.rmtree(path.parent)
        elif path.name == io.METADATA_FILE:
            _edit_json(data, path)
        else:  # edits of binary state files: a flip at the end
            path.write_bytes(path.read_bytes() + data.draw(st.binary(min_size=1, max_size=8), label="tail"))
    if data.draw(st.booleans(), label="reseal"):
        reseal(root)
        done.append("resealed")
    if all(path.exists() and path.read_bytes() == raw for path, raw in before.items()):
        done.append("unchanged")
    return done


def _edit_json(data: st.DataObject, path: Path) -> None:
    try:
        metadata = json.loads(path.read_bytes())
    except ValueError:
        return
    slots = list(_slots(metadata, ()))
    where = data.draw(st.sampled_from(slots), label="slot")
    parent = metadata
    for key in where[:-1]:
        parent = parent[key]
    if where and isinstance(parent, dict) and data.draw(st.booleans(), label="delete key"):
        del parent[where[-1]]
    elif where:
        parent[where[-1]] = data.draw(JSON_VALUES, label="value")
    else:
        metadata = data.draw(JSON_VALUES, label="value")
    path.write_text(json.dumps(metadata))


def _slots(value, where):
    yield where
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _slots(item, (*where, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _slots(item, (*where, i))


def reseal(directory: Path) -> int | None:
    """Recomputes every checksum under `directory` bottom-up, as a careful hand edit would
    (metadata that no longer parses keeps its bytes); returns the metadata's CRC-32."""
    child_crcs = {}
    for sub in sorted(p for p in directory.iterdir() if p.is_dir() and not p.is_symlink()):
        crc = reseal(sub)
        if crc is not None:
            child_crcs[f"{sub.name}/{io.METADATA_FILE}"] = crc
    file = directory / io.METADATA_FILE
    if not file.exists():
        return None
    raw = file.read_bytes()
    with contextlib.suppress(ValueError):
        metadata = json.loads(raw)
        if isinstance(metadata, dict) and isinstance(metadata.get("checksums"), dict):
            checksums = metadata["checksums"]
            for name in list(checksums):
                if (directory / name).is_file() and "/" not in name:
                    checksums[name] = zlib.crc32((directory / name).read_bytes())
                elif name in child_crcs:
                    checksums[name] = child_crcs[name]
            raw = json.dumps(metadata).encode()
            file.write_bytes(raw)
    (directory / io.COMPLETE_MARKER).write_text(json.dumps({io.MARKER_KEY: zlib.crc32(raw)}))
    return zlib.crc32(raw)
