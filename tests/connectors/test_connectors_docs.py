"""The code blocks of docs/concepts/connectors.md run as written."""

import numpy as np


def test_docs_code_blocks_run(run_doc_blocks, capsys):
    namespace = run_doc_blocks("docs/concepts/connectors.md", blocks=6)
    # The worked example: the module is built for the appended feature, and the episodes hold it.
    shape, time_feature = capsys.readouterr().out.splitlines()[:2]
    assert shape == "(5,)"
    (episode,) = namespace["episodes"]
    assert episode.get_observations(-1).shape == (5,)
    assert float(time_feature) == np.float32(episode.t / 500)
    assert namespace["batch"]["episode_len"].tolist() == [2.0, 5.0]
    assert namespace["episode"].get_observations(-1).tolist() == [2.0, 2.0]  # the preprocessor's rewrite
    # A piece for both pipelines: RLlib's spelling built the learner pipeline's class.
    assert type(namespace["piece"]).__module__ == "flywheel.connectors.learner.frame_stacking"
    assert namespace["piece"].num_frames == 4
