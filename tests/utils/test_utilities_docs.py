"""The code block of docs/concepts/utilities.md runs as written."""


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/utilities.md", blocks=1)
    assert namespace["td_errors"]("p0", 3, 1) == 2
