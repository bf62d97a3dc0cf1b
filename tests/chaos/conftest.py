"""Hypothesis profiles for the fuzz tests: "ci" (the default, bounded and repeatable) and "long".

`make test` runs the "ci" profile: a fixed number of examples per test, derandomized so every run
tries the same inputs (a failure in CI is a real regression, never a new random draw).
`make chaos` sets FLYWHEEL_FUZZ=long: many more examples, random each run, failures kept in the
local `.hypothesis/` database so the next run replays them first.
"""

import os

from hypothesis import HealthCheck, Phase, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
# No "explain" phase: it re-runs a failing example many times to point at lines, minutes for a checkpoint load.
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]

settings.register_profile(
    "ci",
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SLOW_OK,
    phases=_PHASES,
)
settings.register_profile(
    "long", max_examples=1_000, deadline=None, suppress_health_check=_SLOW_OK, phases=_PHASES
)
settings.load_profile(os.environ.get("FLYWHEEL_FUZZ", "ci"))
