"""The admission-rate estimate: counted from QuotaReserved times, within a sliding window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.builders import make_wl, psa
from webhook.core.admission_rate import AdmissionRates, Rate, method
from webhook.core.workload import parse_workload

EPOCH_2025 = datetime(2025, 1, 1, tzinfo=UTC)  # the builders' ts(0)


def reserved(name: str, at: float, cq: str = "cq") -> object:
    return parse_workload(make_wl(name).request(cpu="1").reserve(cq, psa(cpu=("f", "1")), at=at).obj())


def test_rate_counts_reservations_within_the_window() -> None:
    rates = AdmissionRates(timedelta(minutes=10))
    now = EPOCH_2025 + timedelta(minutes=20)
    for i, minute in enumerate([5, 11, 12, 19.5]):  # the one at 5 min is older than the window
        rates.observe(reserved(f"w{i}", minute * 60), now)  # type: ignore[arg-type]
    rates.observe(reserved("elsewhere", 19 * 60, cq="other"), now)  # type: ignore[arg-type]
    rate = rates.rate("cq", now)
    assert rate == Rate(3, timedelta(minutes=10))
    assert rate.per_minute == 0.3
    # 3 admissions in 10 min: one every 200 s; position 0 is next, position 2 third.
    assert rate.wait(0) == timedelta(seconds=200)
    assert rate.wait(2) == timedelta(seconds=600)
    # Ten minutes later every one of them has left the window.
    assert rates.rate("cq", now + timedelta(minutes=10)) == Rate(0, timedelta(minutes=10))


def test_one_reservation_counts_once_and_a_readmission_again() -> None:
    rates = AdmissionRates()
    now = EPOCH_2025 + timedelta(minutes=5)
    wl = reserved("w", 60)
    for _ in range(3):  # the same object seen again (a relist, a status update)
        rates.observe(wl, now)  # type: ignore[arg-type]
    rates.observe(reserved("w", 120), now)  # type: ignore[arg-type]  # evicted and reserved again
    rates.observe(parse_workload(make_wl("pending").request(cpu="1").obj()), now)
    assert rates.rate("cq", now).admissions == 2


def test_no_admissions_no_estimate() -> None:
    rate = AdmissionRates().rate("cq", EPOCH_2025)
    assert (rate.admissions, rate.per_minute, rate.wait(0)) == (0, 0.0, None)


def test_the_method_names_the_window() -> None:
    assert "600s" in method(timedelta(minutes=10)) and "positionInClusterQueue + 1" in method(timedelta(minutes=10))
