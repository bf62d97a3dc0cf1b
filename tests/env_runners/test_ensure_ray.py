"""Which Ray flywheel's remote runners and learners use when the user started none in the process:
a new local one of their own even while another Ray cluster runs on the machine (one `ray.init()`
would join), or the cluster `RAY_ADDRESS` names (as in a Ray job)."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.ray

ENSURE = """
import ray
from flywheel import PPOConfig
from flywheel.ray_start import ensure_ray

ensure_ray(PPOConfig().env_runners(num_env_runners=1))
print(ray.get_runtime_context().gcs_address)
"""

# A cluster started on this machine (it registers itself as the machine's current cluster).
BESIDE_A_CLUSTER = (
    """
from ray.cluster_utils import Cluster

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
print(cluster.address)
"""
    + ENSURE
    + """
ray.shutdown()
cluster.shutdown()
"""
)


def _run(script: str, env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_a_new_local_ray_while_a_cluster_runs_on_the_machine():
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    cluster, used = _run(BESIDE_A_CLUSTER, env)
    assert used != cluster


def test_ray_address_joins_that_cluster(ray_session):
    running = ray_session.get_runtime_context().gcs_address
    assert _run(ENSURE, {**os.environ, "RAY_ADDRESS": running}) == [running]
