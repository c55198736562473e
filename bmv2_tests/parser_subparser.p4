// parser_subparser: a parser instantiated and applied inside another parser
// (sub-parser) extracts into the caller's header through its out parameter
// and continues at the caller's position in the packet.
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8> kind;
}

header b_t {
    bit<16> v;
}

header c_t {
    bit<8> w;
}

struct headers_t {
    a_t a;
    b_t b;
    c_t c;
}

struct meta_t { }

parser SubParser(packet_in pkt, out b_t b) {
    state start {
        pkt.extract(b);
        transition accept;
    }
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    SubParser() sub;

    state start {
        pkt.extract(hdr.a);
        transition select(hdr.a.kind) {
            1: call_sub;
            default: accept;
        }
    }
    state call_sub {
        sub.apply(pkt, hdr.b);
        pkt.extract(hdr.c);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.b.isValid()) {
            hdr.b.v = hdr.b.v + 0x0101;
        }
        if (hdr.c.isValid()) {
            hdr.c.w = 0xCC;
        }
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
        pkt.emit(hdr.c);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
