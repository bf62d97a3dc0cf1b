"""The code blocks of docs/concepts/checkpoints.md run as written, and so does API.md section 8."""

import warnings

# API.md section 8, verbatim (the contract's example of checkpoints and inference).
API_SECTION_8 = """
import os, tempfile
import numpy as np, torch
from flywheel import PPOConfig, Algorithm, RLModule, Columns

algo = PPOConfig().environment("CartPole-v1").build_algo()
algo.train()
path = algo.save_to_path(tempfile.mkdtemp())          # returns the checkpoint directory
algo.stop()

restored = Algorithm.from_checkpoint(path)             # continues training where it stopped
restored.train()
restored.stop()

module = RLModule.from_checkpoint(os.path.join(path, "learner_group", "learner", "rl_module", "default_policy"))
obs = torch.from_numpy(np.zeros((1, 4), np.float32))
logits = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
action = int(torch.argmax(logits, dim=-1)[0])
"""


def test_docs_code_blocks_run(run_doc_blocks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch marks TorchScript deprecated
        namespace = run_doc_blocks("docs/concepts/checkpoints.md", blocks=5)
    assert namespace["result"]["training_iteration"] == 2
    assert namespace["logits"].shape == (1, 2)
    assert namespace["action"] in (0, 1) and namespace["actions"].shape == (8,)


def test_api_section_8_runs_as_written():
    namespace = {}
    exec(compile(API_SECTION_8, "API.md#8", "exec"), namespace)
    assert namespace["action"] in (0, 1)
    assert namespace["restored"].iteration == 2
