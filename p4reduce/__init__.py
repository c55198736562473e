"""p4reduce: in-network aggregation for distributed deep learning.

The code lives in top-level folders mapped into this namespace by pyproject.toml:
``p4reduce.switch`` (embedded v1model switch and P4 front end), ``p4reduce.controller``,
``p4reduce.host`` and ``p4reduce.testbed``.
"""

__version__ = "0.1.0"
