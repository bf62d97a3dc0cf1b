"""docs/concepts/offline.md: its code blocks run as written."""


def test_offline_page_runs(run_doc_blocks, capsys):
    namespace = run_doc_blocks("docs/concepts/offline.md", blocks=6)
    assert namespace["table"].num_rows == 500
    assert namespace["result"]["evaluation"]["env_runners"]["num_episodes"] == 2
    assert sorted(m for m in namespace["learners"] if m != "__all_modules__") == ["left", "right"]
    assert "['alpha_loss', 'cql_loss', 'policy_loss', 'qf_loss', 'total_loss']" in capsys.readouterr().out
