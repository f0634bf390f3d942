"""Bright, confident detections: high signal-to-noise on the difference image and a
real/bogus score that says real. Worth a look by eye on any night; a good first filter."""

from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="bright_high_snr",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql="diaSource.snr > {min_snr} AND diaSource.reliability > {min_reliability}",
    params={"min_snr": 50, "min_reliability": 0.9},
)
