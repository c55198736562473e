// BAD: .size of an array that is not a header stack; p4c 1.2.5 says "'size' can only be used on header stacks".
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
typedef bit<2> idx_t;
struct rec_t { bit<8> v; bool seen; }
struct pair_t { bit<8>[2] half; }
struct headers_t { ethernet_t ethernet;  }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition accept; }

}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    bit<8>[4] arr;
    rec_t[2] recs;
    pair_t pair;
    apply {
        idx_t i = 1;
        arr = { 1, 2, 3, 4 };
        arr[0] = 3;
        arr[i] = 4;
        recs[1].v = arr[1] + arr[0];
        recs[1].seen = true;
        pair.half[i] = (bit<8>)arr.size;  // expect-error: size
        if (recs[1].v == 7 && recs[1].seen && pair.half[1] == 4 && arr[3] == 4) {
            standard_metadata.egress_spec = 8;
        }
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
