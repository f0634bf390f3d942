"""The TOM's half of test_tom, run by the TOM's own Python (.venv-tom: the wheel's light core and
the TOM Toolkit, no Spark): a TOM (tests/tom_settings.py, from ALERTSIEVE_TOM_* variables) reads
the jobs' topics twice up to their ends, and what it kept is written as JSON for the test, whose
oracle (fastavro over the alert files, astropy) stays in the job's environment.

    .venv-tom/bin/python tests/tom_side.py OUT.json TARGET_FOR_THE_PAGE
"""

from __future__ import annotations

import json
import logging
import sys


def _kept() -> dict:
    """Targets, target lists, photometry and data products as the TOM's database holds them."""
    from tom_dataproducts.models import DataProduct, PhotometryReducedDatum
    from tom_targets.models import Target, TargetList

    return {
        "targets": {
            t.name: {"ra": t.ra, "dec": t.dec, "tags": t.tags} for t in Target.objects.all()
        },
        "lists": {
            tl.name: sorted(t.name for t in tl.targets.all()) for tl in TargetList.objects.all()
        },
        "points": [
            {
                "target": p.target.name,
                "bandpass": p.bandpass,
                "value": p.value,
                "brightness": p.brightness,
                "brightness_error": p.brightness_error,
                "limit": p.limit,
                "timestamp": p.timestamp.isoformat(),
            }
            for p in PhotometryReducedDatum.objects.select_related("target")
        ],
        "stamps": {
            p.product_id: p.data.read(9).decode("ascii", "replace")
            for p in DataProduct.objects.all()
        },
    }


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def main(out: str, page_target: str) -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    from django.contrib.auth.models import User
    from django.test import Client
    from tom_alertstreams.alertstreams.alertstream import get_default_alert_streams
    from tom_targets.models import Target

    (stream,) = get_default_alert_streams()
    warnings = _Collect()
    logging.getLogger("alertsieve").addHandler(warnings)
    handled = stream.listen(until_end=True)
    logging.getLogger("alertsieve").removeHandler(warnings)
    first = _kept()
    again = stream.listen(until_end=True)
    client = Client()
    client.force_login(User.objects.create_superuser("astronomer", password="x"))
    page = client.get(f"/targets/{Target.objects.get(name=page_target).pk}/").content.decode()
    with open(out, "w") as f:
        json.dump(
            {
                "handled": handled,
                "warnings": warnings.lines,
                "first": first,
                "again": again,
                "after_again": _kept(),
                "page": page,
            },
            f,
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
