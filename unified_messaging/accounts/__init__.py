"""Provider accounts: each connection's balance and approved senders, read from the
provider's own API, and the low-balance alert: ``messenger.accounts``."""
