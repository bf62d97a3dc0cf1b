"""`port_paths`: `port_source` over files and folders, in place or into a mirrored tree (`flywheel port`)."""

from __future__ import annotations

import io
import os
import shutil
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flywheel.errors import PortError
from flywheel.porting.source import Problem, port_source
from flywheel.porting.table import ImportTable, load_table


@dataclass
class PortReport:
    """What `port_paths` did: the Python files it read, those it rewrote, and every line left to port."""

    files: list[Path] = field(default_factory=list)
    changed: list[Path] = field(default_factory=list)
    """Files whose text changed (rewritten in place, or written changed under `out`)."""
    problems: list[Problem] = field(default_factory=list)
    written_under: Path | None = None
    """With `out`: the deepest folder under it that holds every copy (``out/examples`` for the folder
    ``a/b/examples``; `out` itself for files or folders side by side). None in place."""

    @property
    def ok(self) -> bool:
        """Whether everything was ported (no line is reported)."""
        return not self.problems


def _skipped(path: Path) -> bool:
    return path.name == "__pycache__" or path.name.startswith(".")


def _walk(folder: Path) -> Iterator[Path]:
    """Every file below `folder` in sorted order, skipping ``__pycache__`` and hidden files and folders."""
    for entry in sorted(folder.iterdir()):
        if _skipped(entry):
            continue
        if entry.is_dir():
            yield from _walk(entry)
        else:
            yield entry


def _inputs(paths: Sequence[str | os.PathLike]) -> tuple[list[tuple[Path, bool]], Path, Path]:
    """``[(file, is_python)]`` named by `paths` (files as given, folders walked), the folder they all lie
    in (the root of the mirror), and the deepest folder that holds them all (a single folder: itself)."""
    if not paths:
        raise PortError("flywheel port needs at least one file or folder to port.")
    found, roots, holders = [], [], []
    for given in map(Path, paths):
        if given.is_dir():
            found += [(path, path.suffix == ".py") for path in _walk(given)]
        elif given.is_file():
            found.append((given, True))
        else:
            raise PortError(
                f"{given}: no such file or folder. Fix: pass the Python files or folders to port."
            )
        roots.append(given.resolve().parent)
        holders.append(given.resolve() if given.is_dir() else given.resolve().parent)
    return found, Path(os.path.commonpath(roots)), Path(os.path.commonpath(holders))


def _check_out(out: Path, paths: Sequence[str | os.PathLike]) -> None:
    if out.exists() and not out.is_dir():
        raise PortError(f"-o {out}: is a file. Fix: name a folder (it is created if missing).")
    for given in map(Path, paths):
        if given.is_dir() and out.resolve().is_relative_to(given.resolve()):
            raise PortError(
                f"-o {out} lies inside {given}, which is being ported. Fix: write the ported copy outside it."
            )


def _port_file(path: Path, destination: Path, table: ImportTable, mirror: bool) -> tuple[bool, list[Problem]]:
    """Ports `path` into `destination` (written when changed, or always when mirroring): (changed, problems).

    The text is decoded as Python decodes source files (coding cookie, BOM), newlines kept as they are."""
    data = path.read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError) as err:
        new_data, problems = (
            data,
            [Problem(str(destination), 1, f"cannot be read as Python source ({err}); save it as UTF-8")],
        )
    else:
        new_text, problems = port_source(text, str(destination), table=table)
        new_data = new_text.encode(encoding)
    if new_data != data or mirror:
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(new_data)
    return new_data != data, problems


def port_paths(paths: Sequence[str | os.PathLike], out: str | os.PathLike | None = None) -> PortReport:
    """Ports the ``.py`` files named by `paths` (files, or folders searched recursively).

    Without `out` the files are rewritten in place (only those that change). With `out` nothing is
    written in place: `out` receives a mirror of the input tree below the deepest folder holding all
    `paths` (``port_paths(["site-packages/ray/rllib/examples"], out="ported")`` writes
    ``ported/examples/...``), Python files ported and other files copied. Problems name the file that
    holds the line (the written one).
    """
    files, root, holder = _inputs(paths)
    target = Path(out) if out is not None else None
    table, report = load_table(), PortReport()
    if target is not None:
        _check_out(target, paths)
        report.written_under = target / holder.relative_to(root)
    for path, is_python in files:
        destination = path if target is None else target / path.resolve().relative_to(root)
        if is_python:
            changed, problems = _port_file(path, destination, table, mirror=target is not None)
            report.files.append(path)
            report.changed += [destination] if changed else []
            report.problems += problems
        elif target is not None:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
    return report
