"""Damaged input files: a Parquet file that is truncated, corrupt or gone is named in an
`OfflineDataError`, or skipped with a warning when `config.offline_data(input_ignore_corrupt_files=True)`.

Both readers check every file's footer (its schema and row count) when they start (`readable_files`):
a file cut short, e.g. by a tool killed mid-write that wrote under the final name, fails there. A file
whose footer reads but whose data does not fails when the local reader reaches it (`file_batches`):
flywheel's recordings carry a CRC checksum per page, verified there, so a flipped byte is found rather
than read as a wrong value; every record batch is validated too (a flipped byte in a string of a file
without checksums is found). pyarrow's errors on reading are `ArrowException`s and `OSError`s (a file
deleted, a corrupt compressed page, a failed checksum). Ray Data's reader verifies no checksums.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.errors import OfflineDataError

logger = logging.getLogger(__name__)

READ_ERRORS = (pa.ArrowException, OSError)
"""What pyarrow raises for a file it cannot read (missing, truncated, corrupt)."""


def damaged(path: str, error: BaseException) -> OfflineDataError:
    """The error naming `path`, which pyarrow could not read (`error`), and the ways out."""
    return OfflineDataError(
        f"{path} is not a readable Parquet file ({type(error).__name__}: {str(error).rstrip('.')}). It may be "
        "truncated (a "
        "writer stopped before it finished) or corrupt. Fix: delete or re-record the file, or skip such files "
        "with a warning: config.offline_data(input_ignore_corrupt_files=True)."
    )


def skip_or_raise(path: str, error: BaseException, ignore: bool) -> None:
    """Logs that `path` is skipped when `ignore`; else raises `damaged(path, error)`."""
    if not ignore:
        raise damaged(path, error) from error
    logger.warning(
        "Skipping %s (input_ignore_corrupt_files=True): not a readable Parquet file: %s: %s",
        path,
        type(error).__name__,
        error,
    )


def readable_files(paths: list[str], ignore: bool) -> list[str]:
    """The files of `paths` whose footer reads (the others skipped with a warning when `ignore`, else
    the first raises); raises when none is left."""
    readable = []
    for path in paths:
        try:
            pq.read_metadata(path)
        except READ_ERRORS as error:
            skip_or_raise(path, error, ignore)
            continue
        readable.append(path)
    if not readable:
        raise OfflineDataError(
            f"None of the {len(paths)} Parquet file(s) of input_ is readable (each was skipped, see the warnings "
            "above). Fix: point input_ at a folder with intact files, or re-record them."
        )
    return readable


def file_batches(
    path: str, batch_size: int, columns: list[str], ignore: bool, skipped: set[str]
) -> tuple[Iterator[pa.RecordBatch], int]:
    """(the record batches of `path`, `batch_size` rows of `columns` each, its page checksums verified;
    its row count). A file pyarrow cannot open or decode raises the error naming it, or with `ignore`
    is added to `skipped` with a warning and ends there (the batches before the damaged one were read)."""
    try:
        file = pq.ParquetFile(path, page_checksum_verification=True)
    except READ_ERRORS as error:
        skip_or_raise(path, error, ignore)
        skipped.add(path)
        return iter(()), 0
    return _batches(
        file.iter_batches(batch_size, columns=columns), path, ignore, skipped
    ), file.metadata.num_rows


def _batches(
    batches: Iterator[pa.RecordBatch], path: str, ignore: bool, skipped: set[str]
) -> Iterator[pa.RecordBatch]:
    while True:
        try:
            batch = next(batches, None)
            if batch is not None:
                batch.validate(
                    full=True
                )  # e.g. a string that is no UTF-8 (a flip in a file without checksums)
        except READ_ERRORS as error:
            skip_or_raise(path, error, ignore)
            skipped.add(path)
            return
        if batch is None:
            return
        yield batch
