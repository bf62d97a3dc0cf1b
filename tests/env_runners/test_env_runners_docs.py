"""The code blocks of docs/concepts/env_runners.md run as written (in order, sharing names)."""


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/env_runners.md", blocks=3)
    assert namespace["runner"].weights_seq_no == 5
    assert 8 <= sum(len(e) for e in namespace["first"]) < 12
