"""The Mininet testbed behind ``p4reduce testbed`` (docs/testbed.md, "Mininet"): N hosts in
network namespaces around one P4 switch process, on shaped and lossy links, with a
management network for the registration service; the workers (p4reduce, the gloo baseline,
DDP training) run as processes inside the hosts.

``topology.py`` runs under the system Python, where Debian's mininet lives; everything else
runs in the venv and starts the parts through their commands (docs/architecture.md).
"""
