"""High-reliability extragalactic candidates: reliable detections far from the Galactic plane
(|b| above a threshold) that are not known solar-system objects. Away from the plane, most new
transients are extragalactic: supernovae, tidal disruptions, AGN flares."""

import numpy as np
import pandas as pd

from alertsieve.filtering.model import python_filter

# ICRS -> Galactic rotation (Hipparcos, ESA 1997, vol. 1, sec. 1.5.3).
ICRS_TO_GALACTIC = np.array(
    [
        [-0.0548755604162154, -0.8734370902348850, -0.4838350155487132],
        [+0.4941094278755837, -0.4448296299600112, +0.7469822444972189],
        [-0.8676661490190047, -0.1980763734312015, +0.4559837761750669],
    ]
)


def galactic_latitude(ra_deg: np.ndarray, dec_deg: np.ndarray) -> np.ndarray:
    ra, dec = np.radians(ra_deg), np.radians(dec_deg)
    xyz = np.stack([np.cos(dec) * np.cos(ra), np.cos(dec) * np.sin(ra), np.sin(dec)])
    return np.degrees(np.arcsin(np.clip((ICRS_TO_GALACTIC @ xyz)[2], -1.0, 1.0)))


@python_filter(
    name="extragalactic",
    survey="rubin",
    description=__doc__,
    contact="alertsieve maintainers",
    columns={
        "ra": "diaSource.ra",
        "dec": "diaSource.dec",
        "reliability": "diaSource.reliability",
        "moving": "ssSource IS NOT NULL",
    },
    params={"min_abs_b": 20.0, "min_reliability": 0.9},
)
def extragalactic(alerts: pd.DataFrame, min_abs_b: float, min_reliability: float) -> pd.Series:
    b = galactic_latitude(alerts["ra"].to_numpy(float), alerts["dec"].to_numpy(float))
    reliable = alerts["reliability"].fillna(0).to_numpy(float) > min_reliability
    return pd.Series((np.abs(b) > min_abs_b) & reliable & ~alerts["moving"].to_numpy(bool))
