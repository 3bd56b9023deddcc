"""The audit log (D32): its vocabulary, its one writer (``audited``), the records and the
query, and ``messenger.audit``.
"""
