"""The native data path of the embedded switch (docs/architecture.md): C generated from the
checked P4 program (the native engine) and the native I/O loop of p4reduce-switch
(``ioloop.py``, ``runtime/ioloop.c``), which share the contract of ``runtime/p4r_handler.h``."""
