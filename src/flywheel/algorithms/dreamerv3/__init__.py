"""DreamerV3 (Hafner et al., 2023): a world model learned from replayed sequences, and an actor and a
critic trained on rollouts imagined in it. The math pieces the paper names live one to a module here."""
