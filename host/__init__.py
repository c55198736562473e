"""Host agent: quantization, streaming protocol, numpy and torch APIs (not built yet; see README status)."""
