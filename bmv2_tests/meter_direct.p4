// meter_direct: a direct_meter attached to a table is read in the table's
// action; with no rates configured it reports GREEN (0).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> color;
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) dm;
    action read_color() {
        dm.read(hdr.h.color);
        sm.egress_spec = 1;
    }
    table t {
        key = {
            hdr.h.a : exact;
        }
        actions = { read_color; NoAction; }
        default_action = NoAction();
        meters = dm;
    }
    apply {
        t.apply();
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
