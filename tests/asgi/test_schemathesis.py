"""Schemathesis against the app in-process, from its own OpenAPI document, with every check.

The document must accept exactly what the app accepts: positive cases are schema-valid
requests that the app must not refuse as malformed, negative cases are schema-invalid ones
that it must refuse, and every answer must match the document (status, headers, body).

Two settings say what the document cannot: 422 is how this API refuses a well-formed
request it cannot carry out (SPEC §7: a recipient that is not a Turkish mobile, for one),
so it is an accepted answer to a valid request; and ``fallback`` naming the workspace's
default provider is a 400 that depends on the workspace, so for such bodies only that one
check is left out.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import re
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance
from schemathesis.config import SchemathesisConfig

from unified_messaging import ManualClock, Messenger
from unified_messaging._access.idempotency import IDEMPOTENCY_KEY_PATTERN
from unified_messaging.asgi import create_app
from unified_messaging.testing import create_testbed


async def _arrange() -> tuple[Messenger, str]:
    messenger = Messenger(clock=ManualClock())
    bed = await create_testbed(messenger=messenger)
    await messenger.templates.set(bed.workspace.id, "order_shipped", "Merhaba {{ name }}")
    # The clock never moves, so the bucket never refills: give the fuzzer's key room.
    key = await messenger.keys.create(
        bed.workspace.id, name="schemathesis", rate_limit=1_000_000, rate_burst=1_000_000
    )
    return messenger, key.secret


def _arranged() -> tuple[Messenger, str]:
    # Import time may already be inside pytest-asyncio's loop: build on a private one.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _arrange()).result()


MESSENGER, API_KEY = _arranged()
DEFAULT_PROVIDER = "sms_a"  # the testbed's first connection
IDEMPOTENCY_KEY = re.compile(IDEMPOTENCY_KEY_PATTERN)

CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {
                "expected-statuses": ["2xx", "401", "403", "404", "409", "422", "429", "5xx"]
            }
        },
        "auth": {"openapi": {"bearerAuth": {"bearer": API_KEY}}},
    }
)
schema = schemathesis.openapi.from_asgi("/v1/openapi.json", create_app(MESSENGER), config=CONFIG)


_used_keys = itertools.count()


def _unique_idempotency_key(case: schemathesis.Case) -> None:
    # The fuzzer repeats small values, and a repeated Idempotency-Key with another body is a
    # (correct) 409 that would hide the rest of the operation. Valid keys are made unique;
    # invalid ones stay as generated, to be refused. Replays have tests of their own.
    key = (case.headers or {}).get("Idempotency-Key")
    if isinstance(key, str) and IDEMPOTENCY_KEY.fullmatch(key) and len(key) < 240:
        case.headers["Idempotency-Key"] = f"{key}-{next(_used_keys)}"


def _names_the_default_as_fallback(case: schemathesis.Case) -> bool:
    # D6: a fallback list must not name the primary provider (400). With ``provider``
    # omitted the primary is the workspace's default, which no schema can know.
    body = case.body
    if not isinstance(body, dict) or body.get("provider") is not None:
        return False
    fallback = body.get("fallback")
    return isinstance(fallback, list) and DEFAULT_PROVIDER in fallback


@schema.parametrize()
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
def test_the_app_keeps_its_openapi_document(case: schemathesis.Case) -> None:
    _unique_idempotency_key(case)
    if _names_the_default_as_fallback(case):
        case.call_and_validate(excluded_checks=[positive_data_acceptance])
    else:
        case.call_and_validate()


class APIWorkflow(schema.as_state_machine()):  # type: ignore[misc]
    """Sends, then follows the document's links to read what was sent (and what failed)."""

    def before_call(self, case: schemathesis.Case) -> None:
        _unique_idempotency_key(case)

    def validate_response(
        self, response: Any, case: schemathesis.Case, additional_checks: Any = None, **kwargs: Any
    ) -> None:
        checks = [positive_data_acceptance] if _names_the_default_as_fallback(case) else []
        case.validate_response(
            response,
            additional_checks=additional_checks,
            excluded_checks=checks,
            transport_kwargs=kwargs or None,
            recorder=self.recorder,
        )


def test_every_answer_naming_a_job_leads_to_its_status_record() -> None:
    APIWorkflow.run(
        settings=settings(
            max_examples=25,
            stateful_step_count=4,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )
