"""`PPOCatalog`: RLlib's PPO model catalog, as the name of what flywheel's PPO module builds."""


class PPOCatalog:
    """What `DefaultPPOTorchRLModule.setup()` builds from `model_config`, named as RLlib names it: an
    encoder (MLP, CNN or LSTM), a policy head and a value head, the networks RLlib's `PPOCatalog`
    builds for its PPO module.

    flywheel has no model catalogs (modules build their layers in `setup()`), so this class has no
    methods: `RLModuleSpec(module_class=DefaultPPOTorchRLModule, catalog_class=PPOCatalog)` asks for
    exactly the module's default networks and is accepted; any other catalog class is refused with
    the fix (networks of your own go in a module's `setup()`).
    """
