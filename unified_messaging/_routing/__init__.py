"""Which provider a message goes to, with which sender, when, and how fast.

Internal: nothing here is public API. It owns

- ``dispatch``: the sender rule (D3, :func:`resolve_sender`), hops and jobs, and the
  submit-with-fallback loop (D4, D6, D7);
- ``adapters``: the pool of live and simulated provider adapters per connection;
- ``breaker_policy``, ``breaker_state`` (pure rules), ``breaker``, ``redis_breaker``:
  the per-connection circuit breakers and throttling pauses (D26);
- ``pacing``, ``redis_pacing``, ``send_pacing``: the per-connection send rate (D27, GCRA).
"""
