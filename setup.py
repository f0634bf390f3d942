"""Packages: the library, and four top-level folders a checkout keeps where contributors look
(``filters/``, ``models/``, ``schemas/``, ``conf/``) installed as packages of their own, so a wheel carries the
contributed filters and models, ZTF's schemas and the demo's settings, read with ``importlib.resources``.
Everything else is in pyproject.toml: its ``[tool.setuptools]`` cannot both find the library's
packages and install folders under other names, which this file does in a few lines."""

from setuptools import find_packages, setup

FOLDERS = {
    "alertsieve_filters": "filters",
    "alertsieve_models": "models",
    "alertsieve_schemas": "schemas",
    "alertsieve_conf": "conf",
}
#: Subfolders that hold only data, and their files. Each is a package too: Python imports any
#: folder, so setuptools warns at every install about a subfolder whose files it ships but whose
#: package it was not given (a new data subfolder goes here).
DATA_SUBFOLDERS = {
    "alertsieve_schemas.ztf": ["*.avsc"],
    # lsst-alert-packet's, in folders MAJOR/MINOR (numbers: no package names, so plain data).
    "alertsieve_schemas.rubin": ["latest.txt", "*/*/*.avsc"],
    "alertsieve_conf.experiments": ["*.yaml"],
    "alertsieve_models.files": ["*.zip", "*.csv", "*.onnx", "*.json", "*.md"],
    # compiled where the library is installed, against its pyspark (alertsieve.spark.own_jar)
    "alertsieve.stream.java": ["*.java"],
}

setup(
    packages=[*find_packages(include=["alertsieve*"]), *FOLDERS, *DATA_SUBFOLDERS],
    package_dir=FOLDERS,
    package_data={
        "alertsieve.spark": ["log4j2.properties"],
        "alertsieve_filters": ["*.yaml", "*.yml"],
        "alertsieve_conf": ["*.yaml"],
        **DATA_SUBFOLDERS,
    },
)
