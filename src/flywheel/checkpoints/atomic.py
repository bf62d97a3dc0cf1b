"""`save_directory`: put a new checkpoint at a path without ever losing the old one or a user's file.

A save writes the whole tree into a hidden sibling `.name.tmp-xxxxxxxx` and then puts it in place:

- no directory (or an empty one, as Ray Tune hands out) at the path: one `rename`;
- a flywheel checkpoint at the path: one atomic exchange of the two directories (Linux
  `renameat2(RENAME_EXCHANGE)`), then the old tree, now in the sibling, is deleted. Where the
  exchange is unavailable the old checkpoint is renamed to `.name.old-xxxxxxxx` first and the new
  one renamed into place; a kill between those two renames leaves no checkpoint at the path but
  both complete trees next to it, which a load names in its error and the next save removes;
- anything else at the path is refused: a file, or a directory that is not an intact flywheel
  checkpoint, or a checkpoint holding files flywheel did not write. So a save never deletes a
  file it did not write.

Leftovers of interrupted saves (`.name.tmp-*`, `.name.old-*`) are removed by the next save to the
same path, once its own checkpoint is in place. The path is resolved as the operating system
resolves it (`os.path.realpath`): a symlink is followed and stays a symlink to the new checkpoint,
and `a/../b` is `b` next to wherever `a` points. Like `torch.save`, nothing is fsynced.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

from flywheel.checkpoints import io
from flywheel.checkpoints.tree import Node, leftovers, read_tree
from flywheel.errors import CheckpointError

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_NO_ACCESS = (errno.EACCES, errno.EPERM, errno.EROFS)


def save_directory(path: str | os.PathLike | None, write: Callable[[Path], object]) -> str:
    """Runs `write(tmp_dir)` and puts `tmp_dir` at `path` only if it succeeded; returns the resolved
    path. `path=None` saves to a new temporary directory. See the module docstring for the rules."""
    target = Path(os.path.realpath(tempfile.mkdtemp(prefix="flywheel_checkpoint_") if path is None else path))
    replacing = _check_target(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
    except OSError as e:
        raise _save_error(target, e, replacing) from e
    try:
        write(tmp)
        _put_in_place(tmp, target, replacing)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise _save_error(target, e, replacing) from e
        raise
    for leftover in leftovers(target):
        shutil.rmtree(leftover, ignore_errors=True)
    return str(target)


def _check_target(target: Path) -> bool:
    """Whether `target` holds a checkpoint to replace (False: nothing or an empty directory);
    CheckpointError for anything a save must not touch."""
    _check_parents(target)
    if not os.path.lexists(target):
        return False
    if not target.is_dir():
        raise CheckpointError(
            f"Cannot save a checkpoint to {target}: it is a file, expected a directory path. "
            "Fix: pass a new or empty directory, or an existing checkpoint directory to replace."
        )
    if not any(target.iterdir()):
        return False
    try:
        tree = read_tree(target)
    except CheckpointError as e:
        raise CheckpointError(
            f"Cannot save a checkpoint to {target}: the directory is not empty and is not an intact flywheel "
            f"checkpoint ({e}). A save replaces only complete checkpoints flywheel wrote, so it never deletes "
            "other files. Fix: pass a new or empty directory (or delete that one yourself if you no longer need it)."
        ) from None
    foreign = _foreign_files(tree)
    if foreign:
        raise CheckpointError(
            f"Cannot save a checkpoint to {target}: it holds a flywheel checkpoint, but also files flywheel did "
            f"not write ({', '.join(map(str, foreign[:5]))}{', ...' if len(foreign) > 5 else ''}), which "
            "replacing it would delete. Fix: move those files out of it, or save to another path."
        )
    return True


def _check_parents(target: Path) -> None:
    for parent in target.parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise CheckpointError(
                    f"Cannot save a checkpoint to {target}: {parent} is a file, not a directory, so nothing "
                    "can be created under it. Fix: pass a path whose parents are directories."
                )
            return


def _foreign_files(node: Node) -> list[Path]:
    """Entries of `node`'s tree that flywheel did not write there."""
    ours = {io.METADATA_FILE, io.COMPLETE_MARKER, *node.metadata["checksums"], *node.children}
    foreign = [entry for entry in sorted(node.path.iterdir()) if entry.name not in ours]
    for child in node.children.values():
        foreign += _foreign_files(child)
    return foreign


def _put_in_place(tmp: Path, target: Path, replacing: bool) -> None:
    if not replacing:
        os.rename(tmp, target)  # replaces an empty directory atomically, as POSIX rename does
        return
    if exchange(tmp, target):
        shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the previous checkpoint
        return
    backup = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(target, backup)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(backup, target)
        raise
    shutil.rmtree(backup, ignore_errors=True)


def exchange(a: Path, b: Path) -> bool:
    """Swaps the directories `a` and `b` in one atomic step; False where the platform or file
    system cannot (then nothing happened). Linux only (`renameat2` with `RENAME_EXCHANGE`)."""
    rename = _renameat2()
    if rename is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if rename(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def _renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc older than glibc 2.28 / musl 1.2
        return None


def _save_error(target: Path, error: OSError, replacing: bool) -> CheckpointError:
    """A CheckpointError naming the path, the failed operation and the cause."""
    kept = (
        f"The previous checkpoint at {target} is unchanged."
        if replacing
        else f"Nothing was written at {target}."
    )
    if error.errno in _NO_SPACE:
        fix = "free disk space (or raise the quota or file size limit) and save again"
    elif error.errno in _NO_ACCESS:
        fix = "save to a directory you can write to"
    else:
        fix = "check the path and the file system, then save again"
    where = f" ({error.filename})" if error.filename else ""
    return CheckpointError(
        f"Cannot save a checkpoint to {target}: {error.strerror or error}{where}. {kept} Fix: {fix}."
    )
