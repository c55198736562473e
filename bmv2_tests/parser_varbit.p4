// parser_varbit: extract(hdr, nbits) of a header with a varbit field takes
// exactly nbits (computed at run time from an earlier field); the deparser
// emits the same number of bytes; the following header starts right after.
#include <core.p4>
#include <v1model.p4>

header len_t {
    bit<8> n;          // option length in bytes
}

header opt_t {
    varbit<64> data;   // up to 8 bytes
}

header tail_t {
    bit<8> t;
}

struct headers_t {
    len_t  len;
    opt_t  opt;
    tail_t tail;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>)hdr.len.n * 8);
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.tail.t = ~hdr.tail.t;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.len);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.tail);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
