"""Schemas alertsieve ships, installed as the package ``alertsieve_schemas`` and read with
``importlib.resources``, so a wheel carries them:

- ``ztf/*.avsc``: ZTF's writer schemas exactly as ZTF's headers hold them;
- ``rubin/MAJOR/MINOR/*.avsc`` and ``rubin/latest.txt``: Rubin's, as lsst-alert-packet (the
  version pyproject.toml pins) ships them in ``lsst.alert.packet.schema.get_schema_root()``, its
  examples left out. A subscriber's install decodes Rubin alerts without that package and its
  dependencies. tests/test_schemas.py checks each file equals the installed package's, so a new
  pin fails it until the files are copied again.
"""
