"""BMv2's STF test format: parser, packet comparison and the runner behind ``p4reduce-stf``."""
