// meta_assert_log: assert() and assume() whose condition holds, and log_msg()
// with and without arguments, have no effect on the packet; processing
// continues past them in ingress and egress.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> done;
}

struct headers_t {
    h_t h;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        assert(hdr.h.isValid());
        assert(hdr.h.a != hdr.h.b);
        assume(hdr.h.a == 5);
        log_msg("ingress: plain message");
        log_msg("ingress: a={} b={}", {hdr.h.a, hdr.h.b});
        hdr.h.done[15:8] = 0x11;
        sm.egress_spec = 2;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        assert(sm.egress_port == 2);
        assume(true);
        log_msg("egress: port={}", {sm.egress_port});
        hdr.h.done[7:0] = 0x22;
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
