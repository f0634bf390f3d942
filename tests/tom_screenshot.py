"""The screenshot in docs/subscribers.md: a TOM (tests/tom_settings.py) holding the two real
LSSTCam alerts with light curves (tests/data/real/rubin-lsstcam-v10_0-b.avro) as
``alertsieve.tom.handlers.save_match`` saves them, served by the TOM's own server and shot with
headless Chromium (Debian's ``chromium``), once the page is checked to show the target's name and
a plot. The TOM's pages take Bootstrap from a CDN this machine cannot reach: it comes from the npm
registry (``npm pack``) and the TOM's server serves it. Run from the checkout::

    .venv-tom/bin/python tests/tom_screenshot.py docs/figures/tom-target.png

with the TOM's environment (``make tom``'s; the job's has no TOM Toolkit), which holds the
wheel the suite last installed in it.

The Kafka path (job, topics, stream) is test_tom's; this one decodes the same framed bytes the job
would publish (``alertsieve.subscribe.records.make_match``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

TESTS = Path(__file__).parent
FILTER = "reliable"
BOOTSTRAP = "bootstrap@5.3.8"  # the version django-bootstrap5 asks its CDN for
SETTINGS = """from tom_settings import *  # noqa: F403

STATICFILES_DIRS = [{static!r}]
BOOTSTRAP5 = {{
    "css_url": {{"url": "/static/bootstrap.min.css"}},
    "javascript_url": {{"url": "/static/bootstrap.bundle.min.js"}},
}}
"""


def _bootstrap(home: Path) -> None:
    """Bootstrap's CSS and JavaScript from the npm registry, and settings that serve them."""
    subprocess.run(
        ["npm", "pack", "--silent", BOOTSTRAP], cwd=home, check=True, capture_output=True
    )
    (archive,) = home.glob("bootstrap-*.tgz")
    static = home / "static"
    static.mkdir()
    with tarfile.open(archive) as tar:
        for name in ("css/bootstrap.min.css", "js/bootstrap.bundle.min.js"):
            member = tar.extractfile(f"package/dist/{name}")
            (static / Path(name).name).write_bytes(member.read())
    (home / "tom_screenshot_settings.py").write_text(SETTINGS.format(static=str(static)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fill(home: Path) -> tuple[int, str]:
    """Migrate the TOM in ``home`` and save the alerts; returns the id and name of the target
    with the longest light curve. Targets are OPEN (viewable without logging in) here only."""
    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    settings.TARGET_DEFAULT_PERMISSION = "OPEN"
    call_command("migrate", interactive=False, verbosity=0)
    from crafted import REAL

    from alertsieve.alerts.replay import read_raw_records
    from alertsieve.alerts.schemas import LocalSchemaStore, frame, load_rubin_schema
    from alertsieve.filtering.model import AlertFilter
    from alertsieve.publish.versions import filter_version
    from alertsieve.subscribe.records import make_match
    from alertsieve.tom.handlers import save_match

    schema = load_rubin_schema("10.0")
    store = LocalSchemaStore(home / "schemas")
    version = filter_version(AlertFilter(name=FILTER, sql="diaSource.reliability > 0.6"))
    headers = {"filter": FILTER, "filter_version": version, "payload": "alert"}
    targets = []
    for offset, raw in enumerate(read_raw_records(REAL / "rubin-lsstcam-v10_0-b.avro")):
        value = frame(schema.schema_id, raw.body)
        match = make_match(f"alertsieve-{FILTER}", 0, offset, raw.key, value, headers, store)
        targets.append((len(match.record["prvDiaSources"] or []), save_match(match)))
    longest = max(targets, key=lambda t: t[0])[1]
    return longest.pk, longest.name


def main(out: str) -> int:
    home = Path(tempfile.mkdtemp(prefix="alertsieve-tom-"))
    env = {
        **os.environ,
        "ALERTSIEVE_TOM_HOME": str(home),
        "ALERTSIEVE_TOM_KAFKA": "127.0.0.1:9092",  # not read: no stream runs here
        "ALERTSIEVE_TOM_TOPICS": f"alertsieve-{FILTER}",
        "DJANGO_SETTINGS_MODULE": "tom_screenshot_settings",
        "PYTHONPATH": os.pathsep.join([str(home), str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    os.environ.update(env)
    sys.path[:0] = [str(home), str(TESTS)]
    _bootstrap(home)
    pk, name = _fill(home)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "django", "runserver", "--noreload", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/targets/{pk}/?tab=photometry"
        deadline = time.monotonic() + 60
        while True:
            try:
                page = urllib.request.urlopen(url, timeout=10).read().decode()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"the TOM's server did not answer at {url}") from None
                time.sleep(0.5)
        if name not in page or "plotly-graph-div" not in page:
            raise SystemExit(f"{url} does not show target {name} with a plot")
        subprocess.run(
            [
                shutil.which("chromium") or "chromium",
                "--headless",
                "--no-sandbox",
                "--hide-scrollbars",
                "--window-size=1280,1500",
                "--virtual-time-budget=10000",
                f"--screenshot={Path(out).resolve()}",
                url,
            ],
            check=True,
            capture_output=True,
        )
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(home, ignore_errors=True)
    print(f"{out}: target {name}, {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
