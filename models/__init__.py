"""The contributed models, one module each: installed with alertsieve as the package
``alertsieve_models`` and discovered through its ``alertsieve.models`` entry point
(``contributed``); in a checkout this folder is that package. Their files (ONNX graphs, tables)
are in ``files/``, with their origin and licence in ``files/SOURCES.md``."""
