// BAD: largest_priority_wins set to a number in a table with entries (without entries p4c
// only warns that the property is unknown). p4c: 'largest_priority_wins must be a boolean expression'.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> r;
}

struct headers_t {
    h_t h;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.r = v; }
    table t {
        key = { hdr.h.a : range; }
        actions = { set; }
        entries = {
            priority = 1 : 8w0x10 .. 8w0x20 : set(1);
        }
        largest_priority_wins = 3; // expect-error: priority
    }
    apply { t.apply(); }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
