"""Likely solar-system objects: sources associated with a known moving object (an ssSource
record), for asteroid and comet brokers."""

from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="solar_system",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql="ssSource IS NOT NULL AND diaSource.reliability > {min_reliability}",
    params={"min_reliability": 0.5},
)
