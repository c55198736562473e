// BAD (BMv2 back end): no `main` instance. p4c's front end accepts the program; p4c-bm2-ss writes the P4Info, warns "Program does not contain a `main' module" without a position and exits 1 // expect-error-noline: main
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser Prs(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    table fwd { key = { hdr.eth.dst : exact; } actions = { NoAction; } }
    apply { fwd.apply(); }
}
