"""A catalog around the fields of the simulated visits the stream tests send, and the crossmatch
filter the job tests run with it, with its oracle: astropy's angular separation to every source.

Sources are spread at random over each visit's field (the simulator puts a visit's alerts within
1.75 degrees of its centre), so about one alert in ten has one within the filter's 10 arcsec."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from astropy import units as u
from astropy.coordinates import SkyCoord

from alertsieve.catalogs.store import add_catalog
from alertsieve.sim.populations import FIELD_RADIUS, make_visit

#: (simulator seed, visit index) of the visits the stream tests produce (test_stream_job, test_realtime).
FIELDS = [(21, 0), (21, 1), (21, 2), (22, 0), (61, 0), (62, 0)]
PER_FIELD = 40_000
RADIUS = 30.0  # the catalog's match radius, arcsec

NAME = "near_field_source"
SQL = "xmatch.field.distance_arcsec < 10 AND xmatch.field.mag < 21"


@cache
def field_sources() -> pd.DataFrame:
    rng = np.random.default_rng(17)
    parts = []
    for seed, index in FIELDS:
        visit = make_visit(seed, index)
        centre = SkyCoord(visit.ra * u.deg, visit.dec * u.deg)
        sep = (FIELD_RADIUS + 0.1) * np.sqrt(rng.uniform(0, 1, PER_FIELD))
        pos = centre.directional_offset_by(rng.uniform(0, 360, PER_FIELD) * u.deg, sep * u.deg)
        parts.append(
            pd.DataFrame(
                {"ra": pos.ra.deg, "dec": pos.dec.deg, "mag": rng.uniform(14, 24, PER_FIELD)}
            )
        )
    table = pd.concat(parts, ignore_index=True)
    table.insert(0, "source", [f"f{i}" for i in range(len(table))])
    return table


@cache
def _coords() -> SkyCoord:
    t = field_sources()
    return SkyCoord(t["ra"].to_numpy() * u.deg, t["dec"].to_numpy() * u.deg)


def write_catalog(root: Path) -> Path:
    """The catalog ``field`` in the catalog folder ``root``."""
    field_sources().to_csv(root / "field.csv", index=False)
    add_catalog(root, "field", str(root / "field.csv"), "ra", "dec", RADIUS)
    return root


def near_field_source(alert: dict) -> bool:
    """The nearest source within the catalog's radius is closer than 10 arcsec and brighter than 21."""
    s = alert["diaSource"]
    sep = SkyCoord(s["ra"] * u.deg, s["dec"] * u.deg).separation(_coords()).arcsec
    best = int(np.argmin(sep))
    return bool(sep[best] <= RADIUS and sep[best] < 10 and field_sources()["mag"][best] < 21)


CATALOG_FILTERS = {NAME: (SQL, near_field_source)}
