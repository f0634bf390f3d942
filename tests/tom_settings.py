"""A real TOM for the tests: the TOM Toolkit's own settings (``tom_base.settings``: every TOM
Toolkit app, its hooks and data product types) with tom-alertstreams installed, a sqlite
database and media in the test's folder, and ``ALERT_STREAMS`` reading a filter job's topics on the
tests' broker. The test sets the three environment variables before ``django.setup()``."""

import logging
import os

from tom_base.settings import *  # noqa: F403

# tom_base.settings gives the root logger a console handler of its own: pytest shows the logs.
for _handler in [h for h in logging.getLogger().handlers if h.get_name() == "console"]:
    logging.getLogger().removeHandler(_handler)

HOME = os.environ["ALERTSIEVE_TOM_HOME"]
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(HOME, "tom.sqlite3")}
}
MEDIA_ROOT = os.path.join(HOME, "media")
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
INSTALLED_APPS = [*INSTALLED_APPS, "tom_alertstreams"]  # noqa: F405
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
LOGGING = {"version": 1, "disable_existing_loggers": False}

ALERT_STREAMS = [
    {
        "ACTIVE": True,
        "NAME": "alertsieve.tom.stream.AlertsieveAlertStream",
        "OPTIONS": {
            "URL": os.environ["ALERTSIEVE_TOM_KAFKA"],
            "TOPIC_HANDLERS": {
                topic: "alertsieve.tom.handlers.save_match"
                for topic in os.environ["ALERTSIEVE_TOM_TOPICS"].split(",")
            },
            "SCHEMA_DIR": os.path.join(HOME, "schemas"),
            "START_POSITION": "earliest",
        },
    }
]
