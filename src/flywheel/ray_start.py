"""`ensure_ray`: the one way flywheel starts Ray for its actors, remote env runners and remote learners.

Imported only where actors are made (`env_runners/remote_runners.py`, `core/learner/learner_hosts.py`),
and importing it imports no ray: `ensure_ray` does, when called.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig


def ensure_ray(config: AlgorithmConfig) -> None:
    """Starts Ray in this process unless it runs (or a cluster was joined with `ray.init(address=...)`).

    Ray is started with enough logical CPUs for every runner and learner the config asks for, so
    `num_env_runners=2, num_learners=2` also runs on a 2-core machine (the actors then share cores).
    It is a new Ray of its own (`address="local"`), even while another Ray runs on this machine: a
    cluster is joined only when asked, with `ray.init(address=...)` first or `RAY_ADDRESS` set (as in
    a Ray job).
    """
    import ray

    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init(include_dashboard=False, log_to_driver=False)
        return
    wanted = (
        config.num_env_runners * config.num_cpus_per_env_runner
        + config.evaluation_num_env_runners * config.num_cpus_per_env_runner
        + config.num_learners * config.num_cpus_per_learner
    )
    ray.init(
        address="local",
        num_cpus=max(os.cpu_count() or 1, math.ceil(wanted)),
        include_dashboard=False,
        log_to_driver=False,
    )
