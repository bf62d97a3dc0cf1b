"""The code blocks of docs/concepts/connectors.md run as written."""


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/connectors.md", blocks=3)
    assert namespace["batch"]["episode_len"].tolist() == [2.0, 5.0]
