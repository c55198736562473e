// parser_header_union: extracting into one member of a header_union makes
// that member (and the union) valid; emit(union) emits the valid member;
// setValid() on another member invalidates the previous one.
#include <core.p4>
#include <v1model.p4>

header sel_t {
    bit<8> kind;    // 1 -> a, 2 -> b, else nothing
    bit<8> flags;   // written by ingress: a_valid<<0 | b_valid<<1 | u_valid<<2
    bit<8> swap;    // 1 -> ingress replaces a by b
}

header a_t {
    bit<16> x;
}

header b_t {
    bit<32> y;
}

header_union u_t {
    a_t a;
    b_t b;
}

struct headers_t {
    sel_t sel;
    u_t   u;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.sel);
        transition select(hdr.sel.kind) {
            1: parse_a;
            2: parse_b;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.u.a);
        transition accept;
    }
    state parse_b {
        pkt.extract(hdr.u.b);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.sel.swap == 1 && hdr.u.a.isValid()) {
            hdr.u.b.setValid();
            hdr.u.b.y = 0xCAFEF00D;
        }
        bit<8> f = 0;
        if (hdr.u.a.isValid()) {
            f = f | 1;
        }
        if (hdr.u.b.isValid()) {
            f = f | 2;
        }
        if (hdr.u.isValid()) {
            f = f | 4;
        }
        hdr.sel.flags = f;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.sel);
        pkt.emit(hdr.u);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
