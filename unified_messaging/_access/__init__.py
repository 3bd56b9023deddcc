"""Who may send, and how much: the admission rules a request meets before anything is stored.

Internal: nothing here is public API (the public names are re-exported by
:mod:`unified_messaging`). It owns

- ``keys``: API key format, hashing and parsing (D1);
- ``authorize``: the check order 401 → 403 → 429 and the IP allowlist (D15, D16, D18);
- ``principal``: :class:`Principal`, who is calling;
- ``ratelimit``, ``redis_ratelimit``: the per-key token buckets (D16), in memory or Redis;
- ``idempotency``: ``Idempotency-Key`` replay and conflicts (D22);
- ``flood_guard``: at most N messages to one recipient per window (D28).
"""
