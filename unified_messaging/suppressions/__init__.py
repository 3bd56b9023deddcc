"""The suppression list: its rules, inbound replies that opt out, and
``messenger.suppressions``.
"""
