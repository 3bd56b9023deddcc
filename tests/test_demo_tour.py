"""The ``demo`` tour's last step shows the delivery lifecycle, not a promise of it."""

from __future__ import annotations

from unified_messaging._demo import DEMO_TEMPLATES, run_demo


async def test_the_last_step_shows_a_delivery_report_arrive() -> None:
    written: list[str] = []
    steps = await run_demo(written.append)

    last = steps[-1]
    assert last.step == "get_message"
    assert last.result["status"] == "delivered"
    assert last.result["dlr"]["status"] == "delivered"  # type: ignore[index]
    assert not any("coming" in line for line in written)


async def test_the_tour_sends_with_the_demo_template() -> None:
    steps = await run_demo([].append, as_json=True)

    template = next(step for step in steps if step.step == "template")
    assert template.result["template"] == "order_shipped"
    assert set(DEMO_TEMPLATES) == {"order_shipped", "greet"}
