"""The one exception hierarchy of flywheel.

Every message says what was expected, what came, and how to fix it.
"""


class FlywheelError(Exception):
    """Base class of every error flywheel raises on purpose."""


class ConfigError(FlywheelError, ValueError):
    """A configuration is invalid; the message lists every problem with its fix."""


class ConfigKeyError(ConfigError, TypeError):
    """A config method or `from_dict` got a setting name it does not have (a TypeError too, as Python
    raises for an unexpected keyword)."""


class EnvError(FlywheelError, ValueError):
    """An environment cannot be created or breaks the gymnasium contract."""


class ConnectorError(FlywheelError, ValueError):
    """A connector piece or pipeline is misused or returned something invalid."""


class ModuleError(FlywheelError, ValueError):
    """An RLModule is misconfigured or returned something invalid."""


class EpisodeError(FlywheelError, ValueError):
    """An episode was used against its contract (e.g. a step after it ended)."""


class EpisodeConcatError(EpisodeError, AssertionError):
    """Two episode chunks do not fit together in `concat_episode` (RLlib asserts there: an AssertionError too)."""


class EpisodeIndexError(EpisodeError, IndexError):
    """An episode or lookback-buffer index lies outside the stored data (RLlib raises IndexError there)."""


class EpisodeKeyError(EpisodeError, KeyError):
    """An episode has no such agent or extra model output (RLlib raises KeyError/AssertionError there)."""

    # KeyError's own __str__ would print the message as a quoted repr.
    __str__ = BaseException.__str__


class CheckpointError(FlywheelError, ValueError):
    """A path is not a (readable, compatible) flywheel checkpoint."""


class UntrustedCheckpointError(CheckpointError):
    """A checkpoint names classes to import or values to unpickle, which a load does only when trusted.

    `reason` is the message without its fix, which depends on where the load was asked for:
    ``trusted=True`` (or ``classes=``) in Python, ``--trusted`` on the command line.
    """

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(f"{reason} Fix: {fix}")
        self.reason = reason


class StoppedError(FlywheelError, RuntimeError):
    """An algorithm was used after its `stop()` released its env runners and learners."""


class OfflineDataError(FlywheelError, ValueError):
    """Offline data cannot be written or read (missing column, space mismatch, no files, ...)."""


class LearnerError(FlywheelError, RuntimeError):
    """A learner update failed (e.g. a loss that is not finite)."""


class ArgumentError(FlywheelError, ValueError):
    """A helper function (e.g. in `flywheel.utils`) got an argument it cannot use."""


class SampleArgumentError(ArgumentError, AssertionError):
    """An env runner's `sample()` got arguments it cannot combine (RLlib asserts there: an AssertionError too)."""


class MetricsError(FlywheelError, ValueError):
    """A metric was logged, read or merged against the `MetricsLogger` contract."""


class MetricKeyError(MetricsError, KeyError):
    """A metric key that does not exist was read or deleted (a `KeyError` too, as RLlib raises)."""

    def __str__(self) -> str:
        # KeyError's own __str__ would print the message in quotes.
        return Exception.__str__(self)


class PortError(FlywheelError, ValueError):
    """`flywheel port` was given a path it cannot read or write (a line it cannot port is a report, not an error)."""


class LearnerDiedError(LearnerError):
    """A remote learner's process died (killed, out of memory, node lost); `ranks` lists the dead ranks."""

    def __init__(self, message: str, ranks: list[int] | tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.ranks = list(ranks)

    def __reduce__(self) -> tuple:
        return type(self), (str(self), self.ranks)


class InferenceError(FlywheelError, ValueError):
    """An input given to a policy for acting does not fit it (shape, rank, NaN, ``explore``)."""
