"""Schemas alertsieve ships beside lsst-alert-packet's: ZTF's writer schemas exactly as ZTF's
headers hold them (``ztf/*.avsc``). Installed as the package ``alertsieve_schemas``, read with
``importlib.resources``, so a wheel carries them."""
