"""Periodic-variable candidates: point-like objects seen many times whose flux scatter in some
band is several times its typical error, the signature of a variable star rather than noise."""

from alertsieve.filtering.model import AlertFilter

_RATIO = ", ".join(f"diaObject.{b}_psfFluxSigma / diaObject.{b}_psfFluxErrMean" for b in "grizy")

FILTER = AlertFilter(
    name="periodic_variables",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    sql=(
        "diaObject.nDiaSources >= {min_detections} AND diaSource.extendedness < {max_extendedness}"
        f" AND greatest({_RATIO}) > {{min_scatter_over_error}}"
    ),
    params={"min_detections": 8, "max_extendedness": 0.3, "min_scatter_over_error": 5},
)
