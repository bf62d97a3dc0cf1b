"""The code blocks of docs/concepts/connectors.md run as written."""


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/connectors.md", blocks=4)
    assert namespace["batch"]["episode_len"].tolist() == [2.0, 5.0]
    assert namespace["episode"].get_observations(-1).tolist() == [2.0, 2.0]  # the preprocessor's rewrite
