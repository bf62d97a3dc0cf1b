"""The RLlib blocker: a child process with its folder on PYTHONPATH cannot import ray.rllib, but ray."""

import os
import subprocess
import sys

from flywheel.porting.rllib_blocker import write_rllib_blocker


def test_child_process_cannot_import_rllib_but_ray_and_tune(tmp_path):
    folder = write_rllib_blocker(tmp_path / "block")
    code = (
        "import ray, ray.tune\n"
        "try:\n"
        "    import ray.rllib.algorithms.ppo\n"
        "except ModuleNotFoundError as error:\n"
        "    print('blocked:', error.name)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "blocked: ray.rllib"
