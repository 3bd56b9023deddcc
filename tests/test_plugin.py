"""The pytest plugin, as a host project's test suite sees it (run through pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def host_ini(pytester: pytest.Pytester) -> None:
    # A host project with pytest-asyncio installed sets this; without it, pytest-asyncio warns.
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def test_plugin_fixtures_give_a_ready_sync_messenger_and_outbox(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        def test_sends_through_every_provider(um_sync_messenger, um_principal, um_outbox):
            for code in ["sms_a", "sms_b", "sms_c", "sms_d", "sms_e", "bizchat"]:
                um_sync_messenger.send(
                    um_principal, {"to": "05551234567", "body": code, "provider": code}
                )
            um_sync_messenger.send(
                um_principal, {"to": "@news_channel", "body": "chat", "provider": "chatbot"}
            )
            assert [e.provider for e in um_outbox.accepted] == [
                "sms_a", "sms_b", "sms_c", "sms_d", "sms_e", "bizchat", "chatbot"
            ]
            assert um_outbox.texts()[0] == "sms_a"
            assert um_outbox[0].sender == "UMTEST"
            assert um_outbox.recipients()[-1] == "@news_channel"
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_outbox_records_fallback_attempts_and_filters(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_fallback(um_sync_messenger, um_principal, um_outbox):
            response = um_sync_messenger.send(
                um_principal,
                {"to": "+905550000012", "body": "hi", "fallback": ["sms_b", "sms_c"]},
            )
            assert [e.provider for e in um_outbox.filter(job_id=response.job_id)] == [
                "sms_a", "sms_b", "sms_c"
            ]
            assert [e.attempt for e in um_outbox] == [0, 1, 2]
            assert len(um_outbox.accepted) == 1
            assert um_outbox.filter(provider="sms_a", accepted=False)[0].outcome == "rejected"
            um_outbox.clear()
            assert len(um_outbox) == 0
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_async_fixtures_work_with_a_host_event_loop(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import asyncio

        def test_async_use(um_messenger, um_principal, um_outbox, um_api_key):
            async def run():
                principal = await um_messenger.authenticate(um_api_key)
                assert principal.workspace_id == um_principal.workspace_id
                response = await um_messenger.send(principal, {"to": "05551234567", "body": "x"})
                record = await um_messenger.get_message(principal, response.job_id)
                return record.status

            assert asyncio.run(run()) == "sent"
            assert len(um_outbox) == 1
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_clock_fixture_drives_simulated_reports(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_reports_follow_the_manual_clock(um_testbed, um_clock, um_outbox):
            um_testbed.messenger  # the simulator reports become due on the manual clock
            assert um_clock.now().year == 2026
            before = um_clock.now()
            um_clock.advance(5)
            assert (um_clock.now() - before).total_seconds() == 5
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_every_test_gets_a_fresh_testbed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_one(um_sync_messenger, um_principal, um_outbox):
            um_sync_messenger.send(um_principal, {"to": "05551234567", "body": "x"})
            assert len(um_outbox) == 1

        def test_two(um_outbox, um_testbed):
            assert len(um_outbox) == 0
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_plugin_adds_no_autouse_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_nothing(request):
            assert not [f for f in request.fixturenames if f.startswith("um_")]
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_fixtures_are_listed_with_their_docs(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*um_outbox*", "*Every simulated submission*"])
