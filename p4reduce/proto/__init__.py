"""P4Runtime and P4Info protocol buffers: ``p4info_pb2``, ``p4types_pb2``, ``p4data_pb2``,
``p4runtime_pb2`` and the gRPC classes ``p4runtime_pb2_grpc``.

Generated from the ``p4runtime`` package's descriptors by ``_generate.py`` (which says why the
package's own modules cannot be used with current protobuf). The messages are the same on the
wire; a client built on the ``p4runtime`` package (p4runtime-shell, say) talks to our server
and our client to any P4Runtime server.
"""
