"""Catalog crossmatch, watchlists and watchmaps in Spark SQL, against independent geometry:
cdshealpix for the HEALPix pixels, astropy's angular separation for every match, mocpy for the
sky regions. Alerts: the real LSSTCam v10.0 and Operations Rehearsal v7.4 alerts of tests/data and
simulated v11.1 ones; catalogs made around them at known offsets, with sources inside, outside and
near the radius."""

from __future__ import annotations

from pathlib import Path

import fastavro
import numpy as np
import pandas as pd
import pytest
from astropy import units as u
from astropy.coordinates import SkyCoord

from alertsieve.alerts.replay import read_raw_records
from alertsieve.alerts.schemas import frame, load_rubin_schema
from alertsieve.catalogs.context import BROADCAST_FACTOR, load_context
from alertsieve.catalogs.healpix import order_for_radius, pixels, with_neighbours, with_pixel
from alertsieve.catalogs.store import (
    CatalogError,
    add_catalog,
    add_watchmap,
    list_catalogs,
    load_meta,
)
from alertsieve.filtering.filter_view import filter_view
from alertsieve.filtering.model import AlertFilter
from alertsieve.filtering.prepare import catalog_uses, filter_paths, filter_reads
from alertsieve.filtering.sql_text import named_catalogs
from alertsieve.sim.simulator import AlertSimulator, SimulationConfig
from alertsieve.view.decode_settings import DecodeSettings
from alertsieve.view.samples import message_frame
from alertsieve.view.surveys import rubin_decoder

REAL = Path(__file__).parent / "data" / "real"
IDS = {"7.4": 704, "10.0": 1000, "11.1": 1101}
RADIUS = 30.0  # the catalog's match radius, arcsec


def _alerts() -> list[tuple[bytes, float, float]]:
    """(framed message, ra, dec) of the real alerts in tests/data (6 of each file) and 40 simulated ones."""
    out = []
    for name, version in (
        ("rubin-lsstcam-v10_0.avro", "10.0"),
        ("rubin-opsrehearsal-v7_4.avro", "7.4"),
    ):
        records = list(fastavro.reader(open(REAL / name, "rb")))
        raws = list(read_raw_records(REAL / name))
        out += [
            (frame(IDS[version], raw.body), r["diaSource"]["ra"], r["diaSource"]["dec"])
            for raw, r in zip(raws, records, strict=True)
        ]
    schema = load_rubin_schema("11.1")
    sim = AlertSimulator(SimulationConfig(schema_version="11.1", stamp_size=0, seed=4))
    for a in sim.visit_alerts(0, count=40):
        out.append((frame(1101, schema.encode(a)), a["diaSource"]["ra"], a["diaSource"]["dec"]))
    return out


def _around(
    ra: np.ndarray, dec: np.ndarray, seed: int, per_alert: int = 3, spread: float = 60.0
) -> pd.DataFrame:
    """Sources at random offsets (0 to ``spread`` arcsec) around each position, plus a few
    exactly at a radius's distance give or take 0.01 arcsec, named for the test."""
    rng = np.random.default_rng(seed)
    centre = SkyCoord(np.repeat(ra, per_alert) * u.deg, np.repeat(dec, per_alert) * u.deg)
    sep = rng.uniform(0, spread, centre.size)
    sep[::7] = RADIUS + rng.choice([-0.01, 0.01], len(sep[::7]))  # just inside and just outside
    pos = centre.directional_offset_by(rng.uniform(0, 360, centre.size) * u.deg, sep * u.arcsec)
    return pd.DataFrame(
        {
            "name": [f"s{i}" for i in range(centre.size)],
            "ra_deg": pos.ra.deg,
            "dec_deg": pos.dec.deg,
            "mag": rng.uniform(8, 20, centre.size),
        }
    )


def _nearest(alert_ra: float, alert_dec: float, table: pd.DataFrame, radius: np.ndarray | float):
    """astropy: (index, separation arcsec) of the nearest row within ``radius``, or None."""
    sep = (
        SkyCoord(alert_ra * u.deg, alert_dec * u.deg)
        .separation(
            SkyCoord(table["ra_deg"].to_numpy() * u.deg, table["dec_deg"].to_numpy() * u.deg)
        )
        .arcsec
    )
    inside = np.flatnonzero(sep <= radius)
    if not len(inside):
        return None
    best = inside[np.argmin(sep[inside])]
    return int(best), float(sep[best])


@pytest.fixture(scope="module")
def setup(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("catalogs")
    alerts = _alerts()
    ra, dec = np.array([a[1] for a in alerts]), np.array([a[2] for a in alerts])
    table = _around(ra, dec, seed=1)
    table.to_csv(root / "mine.csv", index=False)
    add_catalog(root, "mine", str(root / "mine.csv"), "ra_deg", "dec_deg", RADIUS)
    watch = _around(ra[::3], dec[::3], seed=2, per_alert=1, spread=40.0)
    watch["radius"] = np.random.default_rng(3).uniform(5, 40, len(watch))
    watch.to_csv(root / "targets.csv", index=False)
    add_catalog(
        root,
        "targets",
        str(root / "targets.csv"),
        "ra_deg",
        "dec_deg",
        1.0,
        kind="watchlist",
        radius_column="radius",
    )
    return root, alerts, table, watch


def _view(spark, root, alerts, sql: dict[str, str]):
    """Each alert's filter view with the catalogs the ``sql`` filters name, in input order."""
    decoder = rubin_decoder(DecodeSettings(topic="x", survey="rubin", schema_versions=tuple(IDS)))
    filters = [AlertFilter(name=n, sql=s) for n, s in sql.items()]
    context = load_context(root, catalog_uses(filters), decoder.detection)
    decoded = decoder.decode(
        message_frame(spark, [m for m, _, _ in alerts]),
        filter_paths(decoder, filter_reads(spark, decoder, filters, context)),
    )
    view = filter_view(decoded, ("_offset",), context)
    columns = [f.condition().alias(f.name) for f in filters]
    return (
        view.select("_offset", *[c for c in ("xmatch", "watch") if c in view.columns], *columns)
        .orderBy("_offset")
        .collect()
    )


def test_alert_pixels_equal_cdshealpix(spark):
    """Equal on random positions; on a pixel corner (ra 0 or 270 on the equator), a neighbour of
    cdshealpix's pixel, which the index covers (each source is filed under its 8 neighbours)."""
    rng = np.random.default_rng(9)
    edges = [
        (0.0, 0.0),
        (270.0, 0.0),
        (359.999999999, 0.0),
        (45.0, 41.8103148958),
        (180.0, -41.8103148958),
        (10.0, 89.99999),
        (10.0, -89.99999),
        (200.0, 90.0),
    ]
    ra = np.r_[rng.uniform(0, 360, 20000), [e[0] for e in edges]]
    dec = np.r_[np.degrees(np.arcsin(rng.uniform(-1, 1, 20000))), [e[1] for e in edges]]
    frame_ = spark.createDataFrame(pd.DataFrame({"ra": ra, "dec": dec}))
    for order in (0, 6, 10, 15):
        got = np.array(
            [r[0] for r in with_pixel(frame_, "ra", "dec", order, "p").select("p").collect()]
        )
        want = pixels(ra, dec, order)
        assert (got[:20000] == want[:20000]).all(), order
        around = with_neighbours(want[20000:], order)
        assert all(
            g == w or g in a for g, w, a in zip(got[20000:], want[20000:], around, strict=True)
        ), order


@pytest.mark.parametrize("radius", [2.0, 30.0, 600.0])
def test_order_keeps_every_disc_in_a_pixel_and_its_neighbours(radius):
    """What the order is for: at it, the cone of the match radius around any position touches
    only the position's pixel and its 8 neighbours (cdshealpix's cone search says which pixels a
    cone touches), so a catalog filed under those pixels holds every source in the radius; and
    the next order is too fine for that to be promised (pixels under 4 radii wide, by astropy)."""
    from cdshealpix.nested import cone_search

    order = order_for_radius(radius)
    rng = np.random.default_rng(int(radius))
    lon = rng.uniform(0, 360, 300)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, 300)))
    lat[:20] = rng.choice([-89.99, -45.0, 0.0, 41.8, 89.99], 20)  # poles, the equator, face corners
    mine = with_neighbours(pixels(lon, lat, order), order)
    for i in range(len(lon)):
        touched, _, _ = cone_search(lon[i] * u.deg, lat[i] * u.deg, radius * u.arcsec, depth=order)
        assert set(touched.tolist()) <= set(mine[i].tolist()), (lon[i], lat[i])
    size = lambda o: np.sqrt(4 * np.pi * u.sr / (12 * 4**o)).to(u.arcsec).value  # noqa: E731
    assert size(order) >= 4 * radius and (order == 17 or size(order + 1) < 4 * radius)


def test_order_refuses_a_radius_that_is_not_positive():
    with pytest.raises(ValueError, match="must be positive"):
        order_for_radius(0)


def test_xmatch_nearest_source_and_filter_equal_astropy(spark, setup):
    root, alerts, table, _ = setup
    rows = _view(
        spark,
        root,
        alerts,
        {"close": "xmatch.mine.distance_arcsec < 12", "bright_neighbour": "xmatch.mine.mag < 12"},
    )
    assert len(rows) == len(alerts) == 6 + 6 + 40
    close = bright = 0
    for row, (_, ra, dec) in zip(rows, alerts, strict=True):
        want = _nearest(ra, dec, table, RADIUS)
        got = row["xmatch"]["mine"]
        if want is None:
            assert got is None and row["close"] is None and row["bright_neighbour"] is None
            continue
        index, sep = want
        assert got["name"] == table["name"][index]
        assert got["distance_arcsec"] == pytest.approx(sep, abs=1e-6)
        assert got["mag"] == pytest.approx(table["mag"][index]) and got["ra_deg"] == pytest.approx(
            table["ra_deg"][index]
        )
        assert row["close"] == (sep < 12) and row["bright_neighbour"] == (table["mag"][index] < 12)
        close, bright = close + (sep < 12), bright + (table["mag"][index] < 12)
    assert 0 < close < len(alerts) and 0 < bright < len(alerts)  # the test has both outcomes
    edge = [
        abs(s - RADIUS) <= 0.011 for s in (_nearest(ra, dec, table, 99)[1] for _, ra, dec in alerts)
    ]
    assert any(edge)  # sources 0.01 arcsec either side of the radius were nearest to some alerts


def test_watchlist_entry_within_its_own_radius_equals_astropy(spark, setup):
    root, alerts, _, watch = setup
    rows = _view(spark, root, alerts, {"watched": "watch.targets IS NOT NULL"})
    hits = 0
    for row, (_, ra, dec) in zip(rows, alerts, strict=True):
        sep = (
            SkyCoord(ra * u.deg, dec * u.deg)
            .separation(
                SkyCoord(watch["ra_deg"].to_numpy() * u.deg, watch["dec_deg"].to_numpy() * u.deg)
            )
            .arcsec
        )
        inside = np.flatnonzero(sep <= watch["radius"].to_numpy())
        got = row["watch"]["targets"]
        assert row["watched"] == bool(len(inside))
        if len(inside):
            best = inside[np.argmin(sep[inside])]
            assert got["name"] == watch["name"][best] and got["radius_arcsec"] == pytest.approx(
                watch["radius"][best]
            )
            hits += 1
    assert 0 < hits < len(alerts)


def test_watchmap_region_equals_mocpy(spark, setup, tmp_path):
    from mocpy import MOC

    root, alerts, _, _ = setup
    ra, dec = alerts[8][1], alerts[8][2]  # a cone around an Operations Rehearsal alert
    moc = MOC.from_cone(lon=ra * u.deg, lat=dec * u.deg, radius=0.5 * u.deg, max_depth=11)
    moc.save(str(tmp_path / "region.fits"), format="fits", overwrite=True)
    add_watchmap(root, "region", str(tmp_path / "region.fits"))
    rows = _view(spark, root, alerts, {"inside": "watch.region"})
    want = moc.contains_lonlat(
        np.array([a[1] for a in alerts]) * u.deg, np.array([a[2] for a in alerts]) * u.deg
    )
    assert [r["inside"] for r in rows] == list(want)
    assert 0 < sum(want) < len(alerts)


def test_a_watchmap_finer_than_order_12_grows_to_its_order_12_cells(spark, setup, tmp_path):
    """A MOC at order 15 is stored at order 12 (its cells grow to their parents): the region is
    mocpy's own degradation to order 12, so it holds every alert the MOC holds, and a little more."""
    from mocpy import MOC

    root, alerts, _, _ = setup
    ra, dec = alerts[8][1], alerts[8][2]
    moc = MOC.from_cone(lon=ra * u.deg, lat=dec * u.deg, radius=0.3 * u.deg, max_depth=15)
    moc.save(str(tmp_path / "fine.fits"), format="fits", overwrite=True)
    add_watchmap(root, "fine", str(tmp_path / "fine.fits"))
    rows = _view(spark, root, alerts, {"inside": "watch.fine"})
    lon, lat = np.array([a[1] for a in alerts]) * u.deg, np.array([a[2] for a in alerts]) * u.deg
    assert [r["inside"] for r in rows] == list(moc.degrade_to_order(12).contains_lonlat(lon, lat))
    assert all(
        r["inside"] for r, inside in zip(rows, moc.contains_lonlat(lon, lat), strict=True) if inside
    )
    assert 0 < sum(r["inside"] for r in rows) < len(alerts)


def test_unknown_or_misnamed_catalog_fails_naming_the_filter_and_the_fix(setup):
    root = setup[0]
    with pytest.raises(
        CatalogError,
        match=r"filter 'f' .* reads xmatch\.nope, not in the catalog folder .*alertsieve catalog add nope FILE",
    ):
        load_context(
            root,
            catalog_uses([AlertFilter(name="f", sql="xmatch.nope.distance_arcsec < 1")]),
            "diaSource",
        )
    with pytest.raises(
        CatalogError,
        match=r"reads xmatch\.targets, but targets is a watchlist: write watch\.targets",
    ):
        load_context(
            root,
            catalog_uses([AlertFilter(name="f", sql="xmatch.targets IS NOT NULL")]),
            "diaSource",
        )
    assert named_catalogs("xmatch.a.b > 1 AND watch.c AND 'xmatch.d' = ''") == {
        ("xmatch", "a"),
        ("watch", "c"),
    }


def test_a_catalog_too_big_to_broadcast_is_refused_before_any_alert(setup):
    """The index's size in memory is recorded (pyarrow's, read back); a driver whose heap cannot
    hold BROADCAST_FACTOR times the joined catalogs is refused at start-up, naming them and the fix."""
    import pyarrow.parquet as pq

    root = setup[0]
    meta = load_meta(root, "mine")
    assert (
        meta.memory_mb
        == round(pq.read_table(root / "mine" / "index.parquet").nbytes / 2**20, 1)
        > 0
    )
    f = AlertFilter(name="f", sql="xmatch.mine.distance_arcsec < 1")
    enough = BROADCAST_FACTOR * meta.memory_mb + 1
    assert load_context(root, catalog_uses([f]), "diaSource", heap_mb=enough).catalogs == (meta,)
    with pytest.raises(
        CatalogError,
        match=r"take \d+ MB in memory \(xmatch\.mine \d+ MB\) and a broadcast needs about 5 times that.*"
        r"give the driver more memory \(spark\.driver\.memory, spark-submit --driver-memory\)",
    ):
        load_context(root, catalog_uses([f]), "diaSource", heap_mb=enough - 2)


def test_catalog_add_refuses_bad_files_with_the_fix(tmp_path):
    (tmp_path / "c.csv").write_text("name,ra,dec\na,10,20\nb,,30\n")
    with pytest.raises(
        CatalogError, match="no column 'RA' for --ra; its columns are name, ra, dec"
    ):
        add_catalog(tmp_path, "c", str(tmp_path / "c.csv"), "RA", "dec", 2)
    with pytest.raises(
        CatalogError, match=r"1 of 2 rows have no finite position in ra/dec \(first: row 1\)"
    ):
        add_catalog(tmp_path, "c", str(tmp_path / "c.csv"), "ra", "dec", 2)
    with pytest.raises(CatalogError, match="catalog name '1x'"):
        add_catalog(tmp_path, "1x", str(tmp_path / "c.csv"), "ra", "dec", 2)
    assert list_catalogs(tmp_path) == []
