"""The code blocks of docs/concepts/reporting.md run as written (in order, sharing names)."""

from pathlib import Path


def test_docs_code_blocks_run(capsys, run_doc_blocks):
    namespace = run_doc_blocks("docs/concepts/reporting.md", blocks=4)
    assert capsys.readouterr().out == (
        "2\nCSVWriter skips 'env_runners/last_frame', 'env_runners/episode_videos', 'env_runners/actions': "
        "this file holds numbers, strings and None only (TensorBoard draws images, videos and lists).\n"
    )
    run_dir = Path(namespace["run_dir"])
    assert sorted(p.name for p in run_dir.iterdir())[1:] == ["results.csv", "results.jsonl"]
    assert len(namespace["returns"]) == 2
    assert sorted(p.name for p in namespace["media_dir"].iterdir())[1:] == ["results.csv"]
