// err_stack_out_of_bounds: extracting into stack.next when the stack is full
// fails with error.StackOutOfBounds; the elements already extracted stay
// valid, the packet is not dropped, and the unextracted bytes stay payload.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8> err_oob;    // parser_error == StackOutOfBounds
    bit<8> err_none;   // parser_error == NoError
    bit<8> mask;       // bit i = items[i].isValid()
    bit<8> done;       // 1 when the parser reached state `done`
}

header item_t {
    bit<7> val;
    bit<1> bos;
}

struct headers_t {
    rep_t     rep;
    item_t[2] items;
}

struct meta_t {
    bit<8> done;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        transition parse_item;
    }
    state parse_item {
        pkt.extract(hdr.items.next);
        transition select(hdr.items.last.bos) {
            1: done;
            default: parse_item;
        }
    }
    state done {
        meta.done = 1;
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.setValid();
        hdr.rep.err_oob = (sm.parser_error == error.StackOutOfBounds) ? 8w1 : 8w0;
        hdr.rep.err_none = (sm.parser_error == error.NoError) ? 8w1 : 8w0;
        hdr.rep.mask = 0;
        if (hdr.items[0].isValid()) {
            hdr.rep.mask = hdr.rep.mask | 1;
        }
        if (hdr.items[1].isValid()) {
            hdr.rep.mask = hdr.rep.mask | 2;
        }
        hdr.rep.done = meta.done;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.rep);
        pkt.emit(hdr.items);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
