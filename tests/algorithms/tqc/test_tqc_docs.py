"""The code block of docs/concepts/tqc.md runs as written."""


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/tqc.md", blocks=1)
    result = namespace["result"]
    assert result["num_env_steps_sampled_lifetime"] == 200
    learner = result["learners"]["default_policy"]
    assert learner["qf_loss"] > 0 and 0.0 < learner["alpha_value"] < 1.0  # 100 updates tuned it down from 1
    critics = namespace["algo"].learner_group.foreach_learner(
        lambda learner: learner.module["default_policy"].qfs
    )
    assert [head.out_features for head in critics[0]] == [5, 5]
