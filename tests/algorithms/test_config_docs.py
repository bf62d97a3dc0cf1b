"""The code blocks of docs/concepts/config.md run as written (in order, sharing names); the batch-size
block asserts RLlib's train_batch_size rule itself."""


def test_config_docs_blocks_run(run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/config.md", blocks=6)
    assert repr(namespace["config"]) == "MyConfig(tau=0.01)"  # the last block's custom config
