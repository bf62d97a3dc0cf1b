"""Seeds: how every flywheel process derives its random streams from `config.seed`.

- The driver (the algorithm's process) seeds Python's `random`, NumPy's and torch's global generators
  with `seed` when the algorithm is built.
- Env runner `w` (0 = local, 1..N remote) seeds torch with `seed + w` and its sub-env `i` with
  `seed + w * num_envs + i`; a remote runner's process also seeds `random` and NumPy with `seed + w`.
- Learner rank `r` (remote learners) seeds its process with `seed + r` before building its module.
- A resumed run reseeds its runners from `derive_seed(seed, w, num_env_steps_sampled_lifetime)`, so it
  does not replay the first iteration's episodes (see `EnvRunner.reseed`).
"""

from __future__ import annotations

import random

import numpy as np


def seed_process(seed: int) -> None:
    """Seeds this process's global generators: Python's `random`, NumPy's and torch's."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def derive_seed(*entropy: int) -> int:
    """A seed in [0, 2**32) determined by the non-negative ints `entropy`; different inputs give
    independent-looking seeds (NumPy's `SeedSequence` hashing)."""
    return int(np.random.SeedSequence(list(entropy)).generate_state(1)[0])
