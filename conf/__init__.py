"""Settings files: the demo's job (``filter_stream.yaml``) and the scaling experiments
(``experiments/*.yaml``). Installed as the package ``alertsieve_conf``, read with
``importlib.resources``, so a wheel carries them."""
