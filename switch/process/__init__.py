"""The ``p4reduce-switch`` process: ports, the data-plane loop and the P4Runtime server."""
