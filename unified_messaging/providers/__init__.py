"""Provider adapters: the protocol, the simulator, one module per provider."""
