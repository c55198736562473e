"""Running the parts together (docs/architecture.md): the local stack on loopback
(``local.LocalStack``: the embedded switch, the controller's registration service and worker
processes, each started through its command), ``p4reduce check`` (``check``) and the
``p4reduce`` entry point (``cli``). docs/testbed.md describes them."""
