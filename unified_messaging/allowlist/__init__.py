"""The IP allowlist (D18): ``messenger.allowlist``."""
