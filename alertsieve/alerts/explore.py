"""Looking at alerts in a notebook: the schema as a table, an alert's light curve, its cutouts
as images. Works on alert records as fastavro returns them (and as the simulator makes them)."""

from __future__ import annotations

import io

from alertsieve.alerts.schemas import AlertSchema

#: Matplotlib colours for the LSST bands, blue to red.
BAND_COLORS = {
    "u": "purple",
    "g": "tab:blue",
    "r": "tab:green",
    "i": "tab:orange",
    "z": "tab:red",
    "y": "brown",
}
ZERO_POINT_NJY = 31.4  # AB magnitude of 1 nJy


def _type_name(avro_type) -> str:
    if isinstance(avro_type, list):
        names = [_type_name(t) for t in avro_type if t != "null"]
        return ("null|" if "null" in avro_type else "") + "|".join(names)
    if isinstance(avro_type, dict):
        if avro_type.get("type") == "array":
            return f"array<{_type_name(avro_type['items'])}>"
        return avro_type.get("name", avro_type.get("type", "?"))
    return str(avro_type)


def field_table(schema: AlertSchema, record: str | None = None):
    """Fields of the alert (or of one of its records, e.g. ``diaSource``) with type and doc:
    what a SQL filter can name."""
    import pandas as pd

    fields = schema.definition["fields"]
    if record is not None:
        field = next(f for f in fields if f["name"] == record)
        t = field["type"]
        t = next((x for x in t if x != "null"), t) if isinstance(t, list) else t
        t = t["items"] if t.get("type") == "array" else t
        fields = t["fields"]
    return pd.DataFrame(
        [
            {"field": f["name"], "type": _type_name(f["type"]), "doc": f.get("doc", "")}
            for f in fields
        ]
    )


def light_curve(alert: dict):
    """Previous detections plus this one: time, band, flux (nJy) and AB magnitude."""
    import numpy as np
    import pandas as pd

    sources = [*(alert.get("prvDiaSources") or []), alert["diaSource"]]
    frame = pd.DataFrame(
        {
            "mjd": [s["midpointMjdTai"] for s in sources],
            "band": [s.get("band") for s in sources],
            "flux_njy": [s["psfFlux"] for s in sources],
            "flux_err_njy": [s.get("psfFluxErr") for s in sources],
        }
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["mag"] = ZERO_POINT_NJY - 2.5 * np.log10(
            frame["flux_njy"].where(frame["flux_njy"] > 0)
        )
    return frame.sort_values("mjd").reset_index(drop=True)


def plot_light_curve(alert: dict, ax=None):
    import matplotlib.pyplot as plt

    curve = light_curve(alert)
    ax = ax or plt.gca()
    for band, part in curve.groupby("band"):
        ax.errorbar(
            part["mjd"],
            part["flux_njy"],
            yerr=part["flux_err_njy"],
            fmt="o",
            color=BAND_COLORS.get(band),
            label=band,
        )
    ax.set_xlabel("MJD (TAI)")
    ax.set_ylabel("PSF flux (nJy)")
    ax.set_title(f"diaSource {alert['diaSource']['diaSourceId']}")
    ax.legend(fontsize=7)
    return ax


def cutout_image(stamp: bytes | dict):
    """A cutout's pixels (the FITS primary HDU) as a 2-D array: Rubin's FITS bytes, or ZTF's
    stamp (``{"fileName", "stampData"}``, gzipped FITS)."""
    import gzip
    import warnings

    from astropy.io import fits
    from astropy.io.fits.verify import VerifyWarning

    data = stamp["stampData"] if isinstance(stamp, dict) else stamp
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    with warnings.catch_warnings():
        # ZTF's stamps write their SIMPLE card loosely; astropy reads the pixels all the same.
        warnings.simplefilter("ignore", VerifyWarning)
        with fits.open(io.BytesIO(data)) as hdus:
            return hdus[0].data.copy()


def plot_cutouts(alert: dict, axes=None):
    """Science, template and difference stamps side by side (Rubin's or ZTF's)."""
    import matplotlib.pyplot as plt
    import numpy as np

    names = ["cutoutScience", "cutoutTemplate", "cutoutDifference"]
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(9, 3))
    for ax, name in zip(axes, names, strict=True):
        if not alert.get(name):
            ax.set_title(f"{name}: none")
            ax.axis("off")
            continue
        pixels = cutout_image(alert[name])
        low, high = np.nanpercentile(pixels, [1, 99.5])
        ax.imshow(pixels, origin="lower", cmap="gray", vmin=low, vmax=high)
        ax.set_title(name.removeprefix("cutout"))
        ax.axis("off")
    return axes


#: ZTF's filter ids and their bands.
ZTF_BANDS = {1: "g", 2: "r", 3: "i"}


def ztf_light_curve(alert: dict):
    """A ZTF alert's earlier entries plus its candidate: time (JD), band, and either a detection
    (magnitude, error, sign of the subtraction) or an upper limit (``diffmaglim``)."""
    import pandas as pd

    entries = [*(alert.get("prv_candidates") or []), {**alert["candidate"], "is_candidate": True}]
    frame = pd.DataFrame(
        {
            "jd": [e["jd"] for e in entries],
            "band": [ZTF_BANDS.get(e["fid"], str(e["fid"])) for e in entries],
            "detected": [e.get("magpsf") is not None for e in entries],
            "mag": [e.get("magpsf") for e in entries],
            "mag_err": [e.get("sigmapsf") for e in entries],
            "positive": [e.get("isdiffpos") in ("t", "1") for e in entries],
            "limit": [e.get("diffmaglim") for e in entries],
        }
    )
    return frame.sort_values("jd").reset_index(drop=True)


def plot_ztf_light_curve(alert: dict, ax=None):
    """Magnitudes by band (brighter up), upper limits as open triangles."""
    import matplotlib.pyplot as plt

    curve = ztf_light_curve(alert)
    ax = ax or plt.gca()
    for band, part in curve.groupby("band"):
        color = BAND_COLORS.get(band)
        seen, limits = part[part["detected"]], part[~part["detected"]]
        ax.errorbar(seen["jd"], seen["mag"], yerr=seen["mag_err"], fmt="o", color=color, label=band)
        ax.scatter(limits["jd"], limits["limit"], marker="v", facecolors="none", edgecolors=color)
    ax.invert_yaxis()
    ax.set_xlabel("JD")
    ax.set_ylabel("PSF magnitude (limits: open triangles)")
    ax.set_title(f"{alert['objectId']}, candid {alert['candid']}")
    ax.legend(fontsize=7)
    return ax


#: Detections closer than this in time belong to one night's run of visits (days).
SAME_NIGHT_DAYS = 0.3


def history_table(alerts: list[dict]):
    """One row per Rubin alert with an earlier detection: how its history is laid out in time and
    bands, what a filter reading light curves meets (detections, bands, nights, visits a night,
    the span, the shortest and longest gaps between detections, flux errors against fluxes,
    negative fluxes, forced photometry)."""
    import numpy as np
    import pandas as pd

    rows = []
    for alert in alerts:
        curve = light_curve(alert)
        if len(curve) < 2:
            continue
        gaps = np.diff(curve["mjd"].to_numpy())
        nights = 1 + int(np.sum(gaps > SAME_NIGHT_DAYS))
        with np.errstate(invalid="ignore", divide="ignore"):
            relative = (curve["flux_err_njy"] / curve["flux_njy"].abs()).median()
        rows.append(
            {
                "detections": len(curve),
                "bands": "".join(sorted(set(curve["band"]), key="ugrizy".index)),
                "nights": nights,
                "visits_a_night": round(len(curve) / nights, 1),
                "span_days": round(float(curve["mjd"].iloc[-1] - curve["mjd"].iloc[0]), 2),
                "shortest_gap_min": round(float(gaps.min()) * 1440, 1),
                "longest_gap_days": round(float(gaps.max()), 2),
                "median_err_over_flux": round(float(relative), 3),
                "negative": int((curve["flux_njy"] < 0).sum()),
                "forced": len(alert.get("prvDiaForcedSources") or []),
            }
        )
    return pd.DataFrame(rows)
