// BAD: an untyped struct initializer nested in a typed one compared with ==; p4c 1.2.5: "could not infer a type for expression; please specify it explicitly".
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct pair_t { bit<8> a; bit<8> b; } struct nest_t { pair_t p; bit<16> c; }
pair_t mkpair(in bit<8> x) { return { a = x, b = x + 1 }; }
pair_t swap(in pair_t p) { return (pair_t){ a = p.b, b = p.a }; }
struct headers_t { ethernet_t ethernet;  }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition accept; }

}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    pair_t p;
    nest_t n;
    action take(in pair_t q) { meta.b8 = q.b; }
    apply {
        p = mkpair(3);
        pair_t s = swap(p);
        n = { p = s, c = 7 };
        n.p = meta.b8 == 0 ? (pair_t){ a = 1, b = 1 } : p;
        take({ a = 9, b = 10 });
        take((pair_t){ a = 1, b = 2 });
        bool e = n == (nest_t){ p = { a = 1, b = 1 }, c = 7 };  // expect-error: infer
        bool e2 = { a = 3, b = 4 } == p;
        hash(meta.b32, HashAlgorithm.crc32, 32w0, p, 32w65536);
        hash(meta.b16, HashAlgorithm.crc16, 16w0, { p, n.c }, 16w1024);
        log_msg("p={}", { p });
        if (e && e2 && meta.b8 == 2) { standard_metadata.egress_spec = 6; }
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
