"""API keys (D1): ``messenger.keys``."""
