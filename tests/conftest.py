"""Shared test fixtures."""

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def ray_session():
    """One Ray session for every test that needs it (started on first use, 2 CPUs)."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
