"""The contributed filters, one module each: installed with alertsieve as the package
``alertsieve_filters`` and discovered through its ``alertsieve.filters`` entry point
(``contributed``), so a wheel carries them; in a checkout this folder is that package."""
