"""A hand-over gate that lets every job go: for the tests of ``dispatch``'s own mechanics
(batches, breakers, pacing) whose bare jobs carry no stored record. The gate's rules are
tested on their own (tests/test_handover_gate.py) and through every path."""

from __future__ import annotations

from collections.abc import Sequence

from unified_messaging._routing.dispatch import Hop, Job
from unified_messaging._routing.verdicts import GO, Verdict


class OpenGate:
    async def verdicts(self, jobs: Sequence[Job], hop: Hop) -> list[Verdict]:
        return [GO] * len(jobs)


OPEN = OpenGate()
