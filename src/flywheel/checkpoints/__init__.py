"""Checkpoints: `Checkpointable` components saved as directories of metadata, msgpack and safetensors.

See `docs/concepts/checkpoints.md` for the on-disk layout and what loading may and may not do.
"""

from flywheel.checkpoints.checkpointable import Checkpointable
from flywheel.checkpoints.io import FORMAT_VERSION
from flywheel.checkpoints.rotation import rotate_checkpoints

__all__ = ["FORMAT_VERSION", "Checkpointable", "rotate_checkpoints"]
