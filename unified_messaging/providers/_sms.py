"""What the Turkish SMS gateways' adapters share: number forms, batch splitting, JSON answers."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._http import Answer, JsonUnreadable, decode_json_object
from .base import SubmitOutcome, SubmitRequest

__all__ = ["json_answer", "msisdn", "national", "numbers_by_id", "send_in_groups", "split_distinct"]

if TYPE_CHECKING:
    from ._http import HttpAdapter

K = TypeVar("K", bound=Hashable)


def national(number: object) -> str | None:
    """``5XXXXXXXXX`` from any Turkish mobile form (``+905…``, ``905…``, ``05…``), else None."""
    digits = "".join(c for c in str(number) if c.isdigit())
    for prefix in ("90", "0"):
        if len(digits) == 10 + len(prefix) and digits.startswith(prefix):
            digits = digits[len(prefix) :]
    return digits if len(digits) == 10 and digits.startswith("5") else None


def msisdn(value: str | int) -> str | None:
    """``90`` and ten digits, from the forms providers write numbers in; else ``None``."""
    digits = re.sub(r"[^0-9]", "", str(value))
    if digits.startswith("00"):
        digits = digits[2:]
    if len(digits) == 11 and digits.startswith("0"):
        digits = "9" + digits
    elif len(digits) == 10:
        digits = "90" + digits
    return digits if len(digits) == 12 and digits.startswith("90") else None


def split_distinct(
    requests: Sequence[SubmitRequest],
    *,
    size: int | None = None,
    key: Callable[[SubmitRequest], Hashable] | None = None,
) -> list[list[int]]:
    """Positions of ``requests`` in groups that can each be one provider request.

    A group holds at most ``size`` requests of one ``key`` and never one number twice, so
    ``"<request id>:<number>"`` stays a unique message id. First fit, groups in the order
    they were opened.
    """
    groups: list[tuple[Hashable, set[str], list[int]]] = []
    for index, request in enumerate(requests):
        wanted = key(request) if key is not None else None
        for group_key, numbers, members in groups:
            fits = size is None or len(members) < size
            if fits and group_key == wanted and request.to not in numbers:
                numbers.add(request.to)
                members.append(index)
                break
        else:
            groups.append((wanted, {request.to}, [index]))
    return [members for _, _, members in groups]


async def send_in_groups(
    requests: Sequence[SubmitRequest],
    *,
    refusal: Callable[[SubmitRequest], SubmitOutcome | None],
    key: Callable[[SubmitRequest], K],
    size: int,
    send: Callable[[K, Sequence[SubmitRequest]], Awaitable[list[SubmitOutcome]]],
) -> list[SubmitOutcome]:
    """One outcome per request, in order: ``refusal``'s where it refuses one, else ``send``'s.

    What is sent goes key by key (in the order keys first appear), in provider requests of at
    most ``size`` with no number twice (:func:`split_distinct`).
    """
    outcomes: dict[int, SubmitOutcome] = {}
    groups: dict[K, list[int]] = {}
    for index, request in enumerate(requests):
        refused = refusal(request)
        if refused is not None:
            outcomes[index] = refused
        else:
            groups.setdefault(key(request), []).append(index)
    for group_key, members in groups.items():
        group = [requests[i] for i in members]
        for chunk in split_distinct(group, size=size):
            answers = await send(group_key, [group[i] for i in chunk])
            outcomes.update(zip([members[i] for i in chunk], answers, strict=True))
    return [outcomes[i] for i in range(len(requests))]


def numbers_by_id(provider_message_ids: Iterable[str]) -> dict[str, set[str]]:
    """``{request id: numbers}`` of ``"<request id>:<number>"`` message ids; others skipped."""
    wanted: dict[str, set[str]] = {}
    for message_id in provider_message_ids:
        request_id, _, number = message_id.partition(":")
        if request_id and number:
            wanted.setdefault(request_id, set()).add(number)
    return wanted


def json_answer(answer: Answer, adapter: HttpAdapter[Any]) -> dict[str, Any] | SubmitOutcome:
    """The JSON object of a gateway's answer, or the outcome of one not read: ``unknown``
    for a 2xx, ``unavailable`` otherwise (:meth:`HttpAdapter.unreadable`)."""
    if answer.status == 429:
        return SubmitOutcome.unavailable(
            f"{adapter.profile.name} is throttling requests (HTTP 429): {adapter.excerpt(answer)}",
            retry_after=answer.retry_after,
        )
    if answer.truncated:
        return adapter.unreadable(answer, "the answer was not read to its end")
    if answer.status >= 500:
        return adapter.unreadable(answer, "a server error")
    kind = answer.content_type
    if kind and "json" not in kind and kind != "text/plain":
        return adapter.unreadable(answer, f"{kind}, not JSON")
    try:
        return decode_json_object(answer.body)
    except JsonUnreadable as exc:
        return adapter.unreadable(answer, str(exc))
