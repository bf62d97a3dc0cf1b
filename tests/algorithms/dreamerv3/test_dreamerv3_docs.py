"""The code block of docs/concepts/dreamerv3.md runs as written."""


def test_docs_code_blocks_run(run_doc_blocks):
    result = run_doc_blocks("docs/concepts/dreamerv3.md", blocks=1)["result"]
    # 20 env steps, learning from the 16th: 5 sampled since, 80 replayed (16 per update, ratio 16).
    assert result["num_env_steps_sampled_since_learning_lifetime"] == 5
    assert result["num_env_steps_replayed_lifetime"] == 80
    assert result["actual_training_ratio"] == 16.0
    assert result["learners"]["default_policy"]["WORLD_MODEL_L_total"] > 0
