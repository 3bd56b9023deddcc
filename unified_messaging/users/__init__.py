"""Dashboard users (D31): the password rules and ``messenger.users``."""
