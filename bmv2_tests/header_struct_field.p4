// header_struct_field: a header may have struct-typed fields (of bit<W> fields,
// nested too); they sit in the header's wire layout in order, their fields are
// table keys under p4c's names (hdr.h.p.a, hdr.h.p.n.hi), select keys, hash
// inputs, and the struct is a value copied in and out of the header as a whole.
#include <core.p4>
#include <v1model.p4>

struct inner_t {
    bit<4> hi;
    bit<4> lo;
}

struct pair_t {
    bit<8>  a;
    inner_t n;
    bit<8>  b;
}

header h_t {
    pair_t  p;
    bit<16> hsh;   // identity hash of n.hi ++ n.lo ++ a
    bit<8>  res;   // the action table t ran (0x11, 0x22) or FF on a miss
    bit<8>  sel;   // 1 when the parser's select on p.n.lo took the first case
    bit<8>  eq;    // 1 when the struct read back equals the one written
}

struct headers_t {
    h_t h;
}

struct meta_t {
    pair_t saved;
    bit<8> sel;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.p.n.lo) {
            4w1: one;
            default: accept;
        }
    }
    state one {
        meta.sel = 1;
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set(bit<8> v) {
        hdr.h.res = v;
    }
    action miss() {
        hdr.h.res = 0xFF;
    }
    table t {
        key = {
            hdr.h.p.a    : exact;
            hdr.h.p.n.hi : ternary;
        }
        actions = { set; miss; }
        default_action = miss();
    }
    apply {
        t.apply();
        hdr.h.sel = meta.sel;
        hash(hdr.h.hsh, HashAlgorithm.identity, 16w0, { hdr.h.p.n.hi, hdr.h.p.n.lo, hdr.h.p.a }, 32w65536);
        meta.saved = hdr.h.p;
        meta.saved.b = meta.saved.b + 1;
        meta.saved.n.hi = meta.saved.n.lo;
        hdr.h.p = meta.saved;
        hdr.h.eq = hdr.h.p == meta.saved ? 8w1 : 8w0;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
