"""The vault (D21): sealing credentials and secrets, re-sealing under a new key, and
``messenger.vault``.
"""
