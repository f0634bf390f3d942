"""New sources: the first detection of an object, with no earlier detection in the alert's
history, and reliable enough to follow up. Young transients start here."""

from alertsieve.filtering.model import AlertFilter

FILTER = AlertFilter(
    name="new_sources",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=(
        "size(prvDiaSources) = 0 AND diaObject.nDiaSources = 1"
        " AND diaSource.reliability > {min_reliability}"
    ),
    params={"min_reliability": 0.8},
)
