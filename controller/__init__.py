"""Controller: P4Runtime library and the p4reduce-ctl CLI (not built yet; see README status)."""
