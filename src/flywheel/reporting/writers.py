"""Result writers: each `algo.train()` result as a TensorBoard point, a CSV row and a JSON line.

The driving loop::

    writers = default_writers(run_dir)          # flywheel.reporting: TensorBoard events, results.csv, results.jsonl, videos/
    for _ in range(10):
        result = algo.train()
        for writer in writers:
            writer.write(result)
    for writer in writers:
        writer.close()

Every writer flushes after each result, so a run that is still going (or crashed) can be read.

Results may hold more than numbers: a metric logged with reduce="item" or "item_series" keeps its
value as logged (an image, a video, a list). TensorBoard draws those it can (see `media`); the CSV
and JSONL files hold numbers (and strings, None) only and skip the rest, with one warning per key.
"""

from __future__ import annotations

import csv
import json
import math
import numbers
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

import numpy as np

from flywheel.reporting.media import Media, gif_bytes, to_media

RESULTS_CSV = "results.csv"
RESULTS_JSONL = "results.jsonl"
VIDEO_DIR = "videos"
TENSORBOARD_EVENTS = "events.out.tfevents.*"


def flatten_result(result: Mapping[str, object], sep: str = "/") -> dict[str, Any]:
    """The leaves of a nested result keyed by their joined path: ``{"env_runners/episode_return_mean": ...}``."""
    flat: dict[str, Any] = {}
    for key, value in result.items():
        if isinstance(value, Mapping):
            for sub_key, leaf in flatten_result(value, sep).items():
                flat[f"{key}{sep}{sub_key}"] = leaf
        else:
            flat[str(key)] = value
    return flat


class ResultWriter(ABC):
    """Writes each training result somewhere; usable as a context manager that closes it."""

    _warned_keys: set[str] | None = None

    def warn_skipped(self, keys: list[str], why: str) -> None:
        """One warning naming the `keys` this writer skips for the first time (never again for them)."""
        if self._warned_keys is None:
            self._warned_keys = set()
        new = [key for key in keys if key not in self._warned_keys]
        if new:
            self._warned_keys.update(new)
            warnings.warn(f"{type(self).__name__} skips {', '.join(map(repr, new))}: {why}", stacklevel=3)

    @abstractmethod
    def write(self, result: Mapping[str, object]) -> None:
        """Records one result (the nested dict `algo.train()` returns)."""

    @abstractmethod
    def close(self) -> None:
        """Flushes and releases the writer's file(s)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class TensorBoardWriter(ResultWriter):
    """TensorBoard event files in `log_dir`: one scalar per numeric leaf, tagged with its flattened key.

    The step of every scalar is the result's `step_key` (default: the training iteration); NaN is
    written as NaN (TensorBoard shows a gap). Arrays and lists are drawn as images, videos (animated
    GIFs, `VIDEO_FPS` frames per second) or histograms by their shape (see `flywheel.reporting.media`);
    strings and None are skipped, and so, with one warning per key, is anything else.
    """

    def __init__(self, log_dir: str | os.PathLike, *, step_key: str = "training_iteration") -> None:
        # Imported here: it pulls in torch, and reading results or the CLI's --help must stay fast.
        from torch.utils.tensorboard import SummaryWriter

        self.step_key = step_key
        self._writer = SummaryWriter(log_dir=str(log_dir))

    def write(self, result: Mapping[str, object]) -> None:
        flat = flatten_result(result)
        if self.step_key not in flat:
            raise ValueError(
                f"TensorBoardWriter expected the result to contain the step counter {self.step_key!r}, "
                f"but its keys are {sorted(flat)}. Fix: pass step_key=<one of those counters>."
            )
        step = int(flat[self.step_key])
        undrawable = []
        for tag, value in flat.items():
            if is_number(value):
                self._writer.add_scalar(tag, float(value), step)
            elif not is_plain(value):
                media = to_media(tag, value)
                if media is None:
                    undrawable.append(tag)
                for item in media or ():
                    self._draw(item, step)
        if undrawable:
            self.warn_skipped(
                undrawable,
                "not a number, image ([H, W], [C, H, W], [N, C, H, W]), video "
                "([N, T, C, H, W]) or list of numbers (see flywheel.reporting.media).",
            )
        self._writer.flush()

    def _draw(self, media: Media, step: int) -> None:
        if media.kind == "histogram":
            self._writer.add_histogram(media.tag, media.data, step)
        elif media.kind == "image":
            self._writer.add_image(media.tag, media.data, step, dataformats="HWC")
        elif media.kind == "images":
            self._writer.add_images(media.tag, media.data, step, dataformats="NHWC")
        else:
            self._add_video(media.tag, media.data, step)

    def _add_video(self, tag: str, frames: np.ndarray, step: int) -> None:
        # SummaryWriter.add_video needs moviepy < 2; an animated GIF is what it would write.
        # The protobuf-generated module defines its classes at import time, invisible to type checkers.
        from tensorboard.compat.proto.summary_pb2 import Summary  # pyright: ignore[reportAttributeAccessIssue]

        _, height, width, channels = frames.shape
        image = Summary.Image(
            height=height,
            width=width,
            colorspace=1 if channels == 1 else 3,
            encoded_image_string=gif_bytes(frames),
        )
        file_writer = self._writer.file_writer
        assert file_writer is not None  # SummaryWriter makes it in its constructor
        file_writer.add_summary(Summary(value=[Summary.Value(tag=tag, image=image)]), step)

    def close(self) -> None:
        self._writer.close()


class CSVWriter(ResultWriter):
    """A CSV file with one row per result and one column per flattened key.

    The header is the keys of the first result. A later result that brings new keys (e.g.
    ``evaluation/...`` once evaluation first runs) appends them as new columns at the end: the file
    is rewritten once with the wider header and empty cells for the earlier rows, so existing columns
    never move. Keys a result lacks are written as empty cells. Leaves that are not numbers, strings
    or None (arrays, lists) get no column, with one warning per key.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", newline="")
        self._fieldnames: list[str] = []
        self._writer: csv.DictWriter | None = None

    @property
    def fieldnames(self) -> list[str]:
        """The current header."""
        return list(self._fieldnames)

    def write(self, result: Mapping[str, object]) -> None:
        row = {key: _csv_cell(value) for key, value in self._plain_leaves(flatten_result(result)).items()}
        known = set(self._fieldnames)
        new_keys = [key for key in row if key not in known]
        if self._writer is None:
            self._use_header(new_keys, write_it=True)
        elif new_keys:
            self._widen(new_keys)
        assert self._writer is not None  # `_use_header` made it
        self._writer.writerow(row)
        self._file.flush()

    def _plain_leaves(self, flat: dict[str, Any]) -> dict[str, Any]:
        skipped = [key for key, value in flat.items() if not is_plain(value)]
        if skipped:
            self.warn_skipped(skipped, _NOT_PLAIN)
        return {key: value for key, value in flat.items() if is_plain(value)}

    def _use_header(self, fieldnames: list[str], *, write_it: bool) -> None:
        self._fieldnames = fieldnames
        self._writer = csv.DictWriter(self._file, fieldnames=fieldnames, restval="")
        if write_it:
            self._writer.writeheader()

    def _widen(self, new_keys: list[str]) -> None:
        """Rewrites the file with `new_keys` appended to the header (atomically, via a temp file)."""
        self._file.close()
        with self.path.open(newline="") as old:
            rows = list(csv.reader(old))[1:]
        tmp = self.path.with_name(self.path.name + ".tmp")
        padding = [""] * len(new_keys)
        with tmp.open("w", newline="") as new:
            writer = csv.writer(new)
            writer.writerow(self._fieldnames + new_keys)
            writer.writerows(row + padding for row in rows)
        os.replace(tmp, self.path)
        self._file = self.path.open("a", newline="")
        self._use_header(self._fieldnames + new_keys, write_it=False)

    def close(self) -> None:
        self._file.close()


class JSONLWriter(ResultWriter):
    """A JSON-lines file: each result as one nested JSON object per line.

    Non-finite floats (NaN, inf) become ``null`` (JSON has no NaN); numpy numbers become plain
    numbers. Leaves that are not numbers, strings or None (arrays, lists, other objects) are left out,
    with one warning per key.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w")

    def write(self, result: Mapping[str, object]) -> None:
        skipped: list[str] = []
        line = json.dumps(_jsonable(result, "", skipped), allow_nan=False)
        if skipped:
            self.warn_skipped(skipped, _NOT_PLAIN)
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


_NOT_PLAIN = "this file holds numbers, strings and None only (TensorBoard draws images, videos and lists)."


def is_number(value: object) -> bool:
    """Whether a result leaf is a number (a TensorBoard scalar)."""
    return isinstance(value, numbers.Real | np.bool_)


def is_plain(value: object) -> bool:
    """Whether a result leaf is plain data (a number, a string or None) rather than media."""
    return value is None or isinstance(value, str) or is_number(value)


def _csv_cell(value: object) -> Any:
    return "" if value is None else value


def _jsonable(value: object, key: str, skipped: list[str]) -> Any:
    """`value` as JSON data; leaves that are not plain are dropped and their keys added to `skipped`."""
    if isinstance(value, Mapping):
        out = {}
        for name, item in value.items():
            path = f"{key}/{name}" if key else str(name)
            if isinstance(item, Mapping) or is_plain(item):
                out[str(name)] = _jsonable(item, path, skipped)
            else:
                skipped.append(path)
        return out
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
