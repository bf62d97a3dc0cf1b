"""The code blocks of docs/concepts/replay_buffers.md run as written, one after another."""


def test_docs_code_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/replay_buffers.md", blocks=5)
    assert namespace["targets"].shape == (200,)  # one n-step target per sampled transition
    assert len(namespace["buffer"]) == 2 and namespace["buffer"].keys() == ["default_policy"]
