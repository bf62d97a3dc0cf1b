"""Remote runners on a real multi-node Ray cluster (several raylets on this machine): runners are
spread over the nodes, and when a node is removed mid-training its runner is recreated elsewhere.

The cluster lives in a subprocess so it cannot clash with the shared Ray session of other tests.
"""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.ray

SCRIPT = r"""
import ray
from ray.cluster_utils import Cluster

from flywheel import PPOConfig

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
cluster.wait_for_nodes()
ray.init(address=cluster.address, log_to_driver=False)

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=1, num_cpus_per_env_runner=1, sample_timeout_s=120)
    .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
    .fault_tolerance(delay_between_env_runner_restarts_s=0)
)
algo = config.build_algo()


def node_ids():
    return algo.env_runner_group.foreach_env_runner(
        lambda runner: ray.get_runtime_context().get_node_id(), local_env_runner=False
    )


first = algo.train()
before = node_ids()
worker_ids = {node.node_id for node in workers}
print("spread", sorted(before) == sorted(worker_ids))

# Take away runner 1's node and give the cluster a fresh one for the replacement runner.
cluster.remove_node(next(node for node in workers if node.node_id == before[0]))
fresh = cluster.add_node(num_cpus=1)
cluster.wait_for_nodes()
second = algo.train()
after = node_ids()
faults = second["fault_tolerance"]
print("restarts", int(faults["num_env_runner_restarts"]), "healthy", int(faults["num_healthy_env_runners"]))
print("moved", after[0] == fresh.node_id, "kept", after[1] == before[1])
print("steps", first["num_env_steps_sampled_lifetime"], second["num_env_steps_sampled_lifetime"])
algo.stop()
ray.shutdown()
cluster.shutdown()
"""


def test_runners_spread_over_nodes_and_survive_a_removed_node():
    env = {**os.environ, "RAY_raylet_start_wait_time_s": "120"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == [
        "spread True",
        "restarts 1 healthy 2",
        "moved True kept True",
        "steps 200 400",
    ], out.stderr[-3000:]
