"""docs/concepts/tune.md: its code blocks run as written (Tune's default storage goes under tmp_path)."""

import pytest
import ray.train.constants

pytestmark = pytest.mark.ray


def test_tune_page_blocks_run(ray_session, run_doc_blocks, tmp_path, monkeypatch):
    # RunConfig reads its default storage path from here when storage_path is not given.
    monkeypatch.setattr(ray.train.constants, "DEFAULT_STORAGE_PATH", str(tmp_path))
    namespace = run_doc_blocks("docs/concepts/tune.md", blocks=4)
    assert namespace["best"].metrics["training_iteration"] == 1 and namespace["best"].config["lr"] < 1e-2
    assert len(list(tmp_path.iterdir())) == 3  # one experiment folder per block that runs Tune
