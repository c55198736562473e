// meta_zeroed: every standard and user metadata field reads 0 at the start of
// ingress, except ingress_port and packet_length (and parser_error = NoError).
#include <core.p4>
#include <v1model.p4>

// The packet carries a 41-byte report header full of 0xFF; ingress overwrites
// every field with what it observes.
header rep_t {
    bit<16> ingress_port;
    bit<16> egress_spec;
    bit<16> egress_port;
    bit<32> instance_type;
    bit<32> packet_length;
    bit<16> mcast_grp;
    bit<16> egress_rid;
    bit<8>  checksum_error;
    bit<8>  parser_ok;
    bit<8>  priority;
    bit<32> enq_timestamp;
    bit<32> deq_timedelta;
    bit<32> enq_qdepth;
    bit<32> u32;
    bit<16> u16;
    bit<8>  u8;
    bit<8>  flag;
}

struct headers_t {
    rep_t rep;
}

struct inner_t {
    bit<16> u16;
}

struct meta_t {
    bit<32> u32;
    inner_t inner;
    bit<8>  u8;
    bool    flag;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.rep);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.ingress_port = (bit<16>)sm.ingress_port;
        hdr.rep.egress_spec = (bit<16>)sm.egress_spec;
        hdr.rep.egress_port = (bit<16>)sm.egress_port;
        hdr.rep.instance_type = sm.instance_type;
        hdr.rep.packet_length = sm.packet_length;
        hdr.rep.mcast_grp = sm.mcast_grp;
        hdr.rep.egress_rid = sm.egress_rid;
        hdr.rep.checksum_error = (bit<8>)sm.checksum_error;
        hdr.rep.parser_ok = (sm.parser_error == error.NoError) ? 8w1 : 8w0;
        hdr.rep.priority = (bit<8>)sm.priority;
        hdr.rep.enq_timestamp = sm.enq_timestamp;
        hdr.rep.deq_timedelta = sm.deq_timedelta;
        hdr.rep.enq_qdepth = (bit<32>)sm.enq_qdepth;
        hdr.rep.u32 = meta.u32;
        hdr.rep.u16 = meta.inner.u16;
        hdr.rep.u8 = meta.u8;
        hdr.rep.flag = meta.flag ? 8w1 : 8w0;
        // egress_spec is left alone: the packet leaves on port 0.
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.rep);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
