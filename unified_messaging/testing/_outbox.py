"""The outbox: every simulated submission, in order, to assert on (Django's ``mail.outbox``)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from typing import Final, overload

from .._errors import InvalidRecipient
from .._recipients import normalize_turkish_mobile
from .._types import ProviderCode
from ..providers.simulator import SimulatedSubmission

__all__ = ["Outbox"]


class Outbox(Sequence[SimulatedSubmission]):
    """A list of :class:`SimulatedSubmission`, one per provider try, with filters.

    Pass :meth:`record` as a ``Messenger``'s ``on_simulated`` hook. Each entry carries the
    recipient, the rendered text, the provider, the sender, the try's position and outcome.
    """

    def __init__(self) -> None:
        self._items: list[SimulatedSubmission] = []
        self._lock = threading.Lock()

    def record(self, submission: SimulatedSubmission) -> None:
        with self._lock:
            self._items.append(submission)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> SimulatedSubmission: ...

    @overload
    def __getitem__(self, index: slice) -> list[SimulatedSubmission]: ...

    def __getitem__(self, index: int | slice) -> SimulatedSubmission | list[SimulatedSubmission]:
        return self._items[index]

    def __iter__(self) -> Iterator[SimulatedSubmission]:
        return iter(list(self._items))

    def __repr__(self) -> str:
        return f"Outbox({len(self._items)} submissions)"

    def filter(
        self,
        *,
        to: str | None = None,
        provider: ProviderCode | None = None,
        job_id: str | None = None,
        accepted: bool | None = None,
        text_contains: str | None = None,
    ) -> list[SimulatedSubmission]:
        """Entries matching every criterion given."""
        found: list[SimulatedSubmission] = []
        for item in self:
            if to is not None and item.to != to:
                continue
            if provider is not None and item.provider != provider:
                continue
            if job_id is not None and item.job_id != job_id:
                continue
            if accepted is not None and (item.outcome == "accepted") != accepted:
                continue
            if text_contains is not None and text_contains not in item.text:
                continue
            found.append(item)
        return found

    @property
    def accepted(self) -> list[SimulatedSubmission]:
        """The submissions a (simulated) provider accepted: the messages that went out."""
        return self.filter(accepted=True)

    def texts(self) -> list[str]:
        return [item.text for item in self.accepted]

    def recipients(self) -> list[str]:
        return [item.to for item in self.accepted]

    def last_code(self, to: str) -> str | None:
        """The one-time code (D34) of the latest message accepted for ``to`` (typed in any
        form a send takes) that carries one: its first run of 4-10 digits, which in the
        default texts and the SMS Retriever line is the code. ``None`` if there is none. A
        template of your own with other digits before ``{{ code }}``: read the text itself."""
        wanted = _normalized(to)
        for item in reversed(self.accepted):
            if _normalized(item.to) != wanted:
                continue
            found = _CODE.search(item.text)
            if found is not None:
                return found[0]
        return None


#: A code: 4-10 digits, not inside a longer run of digits.
_CODE: Final = re.compile(r"(?<![0-9])[0-9]{4,10}(?![0-9])")


def _normalized(to: str) -> str:
    try:
        return normalize_turkish_mobile(to)
    except InvalidRecipient:
        return to  # a chat id or a number of another country: compared as written
