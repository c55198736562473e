"""The v1model interpreter: a compiled program run packet by packet with BMv2 simple_switch semantics."""
