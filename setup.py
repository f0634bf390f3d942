"""Packages: the library, and three top-level folders a checkout keeps where contributors look
(``filters/``, ``schemas/``, ``conf/``) installed as packages of their own, so a wheel carries the
contributed filters, ZTF's schemas and the demo's settings. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

FOLDERS = {"alertsieve_filters": "filters", "alertsieve_schemas": "schemas", "alertsieve_conf": "conf"}

setup(
    packages=[*find_packages(include=["alertsieve*"]), *FOLDERS],
    package_dir=FOLDERS,
    package_data={
        "alertsieve.spark": ["log4j2.properties"],
        "alertsieve_filters": ["*.yaml", "*.yml"],
        "alertsieve_schemas": ["ztf/*.avsc"],
        "alertsieve_conf": ["*.yaml", "experiments/*.yaml"],
    },
)
