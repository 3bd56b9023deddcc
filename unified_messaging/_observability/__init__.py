"""What an operator sees: metrics, traces and logs (D30), and what they must never show.

Internal: nothing here is public API. It owns

- ``metrics`` (the :class:`Metrics` protocol and the no-op), ``prometheus``;
- ``tracing``: OpenTelemetry spans, only when a tracer provider is set;
- ``log_context``, ``json_log``: request/job context on log records, JSON lines;
- ``logsafe``: redaction of secrets and phone numbers in anything logged.
"""
