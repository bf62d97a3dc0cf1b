"""docs/concepts/iql.md: its code blocks (IQL on recorded Pendulum rows, SAC fine-tuning the result
online) run as written, one after another."""


def test_iql_page_runs(run_doc_blocks, capsys):
    namespace = run_doc_blocks("docs/concepts/iql.md", blocks=2)
    result = namespace["result"]
    assert result["evaluation"]["env_runners"]["num_episodes"] == 1
    assert result["learners"]["__all_modules__"]["num_env_steps_trained"] == 128  # two updates of 64 rows
    printed = capsys.readouterr().out
    assert (
        "'policy_loss', 'qf_loss', 'qf_mean', 'td_error_mean', 'total_loss', 'value_learning_rate', "
        in printed
    )
    assert "'value_loss', 'vf_mean']" in printed
    online = namespace["online"]
    assert online["num_env_steps_sampled_lifetime"] >= 100
    assert online["learners"]["default_policy"]["qf_loss"] > 0
