"""The embedded software switch: a P4_16 front end, and (later) a v1model interpreter,
a P4Runtime server and port adapters. It imports nothing from host/ or controller/."""
