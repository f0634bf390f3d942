"""Matches into a TOM (the TOM Toolkit with ``tom-alertstreams``): ``pip install 'alertsieve[tom]'``.

Modules: ``observations`` (pure: a match as a target and photometry points), ``stream``
(``AlertsieveAlertStream``, the ``ALERT_STREAMS`` entry that reads a job's topics with the
subscriber) and ``handlers`` (``save_match``: targets, target lists, photometry and cutouts in the
TOM's database). ``stream`` and ``handlers`` import Django: use them inside a configured TOM.
"""
