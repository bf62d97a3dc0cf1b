"""The code blocks of docs/concepts/continuous_control.md run as written."""

import math

import torch


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/continuous_control.md", blocks=4)
    assert namespace["result"]["env_runners"]["num_env_steps_sampled_lifetime"] == 256
    assert (
        namespace["metrics"]["episode_return_mean"]
        < -100
        < sum(e.get_return() for e in namespace["episodes"] if e.is_done)
    )
    assert torch.equal(namespace["module"].pi.log_std.detach(), torch.zeros(3))
    assert namespace["config"].model_config["fcnet_kernel_initializer_kwargs"] == {"gain": math.sqrt(2)}
