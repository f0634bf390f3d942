"""What a TOM keeps of a match, without a TOM (``alertsieve.tom.observations``, pure): magnitudes
against astropy's AB system, a flux at or below zero kept as a flux, times against astropy's TAI
and UTC. Real alerts from tests/data/real; test_tom checks the same through a TOM."""

from __future__ import annotations

import datetime as dt

import astropy.units as u
import fastavro
import pytest
from astropy.time import Time
from crafted import REAL

from alertsieve.publish import contract
from alertsieve.tom.observations import ab_magnitude, mjd_to_utc, observation


def _alert() -> dict:
    with (REAL / "rubin-lsstcam-v10_0-b.avro").open("rb") as f:
        return next(iter(fastavro.reader(f)))


@pytest.mark.parametrize("flux", [1e-3, 1.0, 243.5, 4920.3, 1e6, 3.631e12])
def test_ab_magnitudes_equal_astropys(flux):
    magnitude, error = ab_magnitude(flux, flux / 10)
    assert magnitude == pytest.approx((flux * u.nJy).to_value(u.ABmag), abs=1e-12)
    assert error == pytest.approx(2.5 * 0.1 / 2.302585092994046, rel=1e-12)


def test_a_flux_at_or_below_zero_keeps_its_flux_and_no_magnitude():
    alert = _alert()
    alert["diaSource"]["psfFlux"] = -120.5  # fainter than the template
    (point, *history) = observation(alert, contract.PAYLOAD_ALERT, "rubin").points
    assert (point.magnitude, point.magnitude_error, point.flux) == (None, None, -120.5)
    assert point.primary and not any(p.primary for p in history)
    assert len(history) == len(alert["prvDiaSources"]) == 16


def test_times_are_utc_from_tai_and_utc_mjds():
    for mjd in (60000.25, 61041.22617858066):
        tai = Time(mjd, format="mjd", scale="tai").utc.to_datetime(dt.UTC)
        utc = Time(mjd, format="mjd", scale="utc").to_datetime(dt.UTC)
        assert abs(mjd_to_utc(mjd, tai=True) - tai) < dt.timedelta(microseconds=2)
        assert abs(mjd_to_utc(mjd) - utc) < dt.timedelta(microseconds=2)
