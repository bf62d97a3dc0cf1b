"""The code blocks of docs/concepts/evaluation.md run as written (in order, sharing names)."""


def test_evaluation_page_blocks(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/evaluation.md", blocks=3)
    assert namespace["result"]["evaluation"]["env_runners"]["num_episodes"] == 10
    assert namespace["result"]["evaluation"]["env_runners"]["weights_seq_no"] == 1
