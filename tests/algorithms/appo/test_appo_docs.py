"""The code blocks of docs/concepts/impala_appo.md run as written, one after another."""

import math


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/impala_appo.md", blocks=3)
    learners = namespace["learners"]["__all_modules__"]
    assert (learners["weights_lag_mean"], learners["weights_lag_max"]) == (0.5, 1)
    assert namespace["result"]["num_env_steps_sampled_lifetime"] == 100  # the multi-agent block's (env steps)
    assert math.isfinite(namespace["result"]["learners"]["p1"]["total_loss"])
