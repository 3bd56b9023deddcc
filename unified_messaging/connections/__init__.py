"""Provider connections (D3, D21, D26, D27): ``messenger.connections``."""
