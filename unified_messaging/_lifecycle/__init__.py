"""What happens to a message after it is accepted: its states, reports, retries and the worker.

Internal: nothing here is public API. It owns

- ``rules``: the state machine (D10) as data and the one function every move goes through
  (:func:`~unified_messaging._lifecycle.rules.move`), plus the webhook event types;
- ``runtime``: :class:`Lifecycle`, which applies provider outcomes, delivery reports (D20),
  time-outs, fallback re-dispatch (D6), D7 retries and quota release to stored messages;
- ``early_reports``: reports that arrive before the submit's answer is stored;
- ``polling``: polled delivery reports (NetGSM, Mutlucell) and their pacing;
- ``holding``: the send phase of a submit's rows while our own send rate holds them (D27);
- ``worker``: :class:`Worker`, which claims leased work items and runs them.
"""
