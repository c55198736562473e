// parser_stack: a header stack filled with extract(stack.next) in a loop that
// selects on stack.last.bos; extraction stops at the bottom-of-stack item;
// stack.last in a parser reads the most recently extracted element.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8> mask;       // bit i = items[i].isValid()
    bit<8> last_val;   // items.last.val, read in the parser after the loop
    bit<8> sum;        // sum of val over the valid items
}

header item_t {
    bit<7> val;
    bit<1> bos;
}

struct headers_t {
    rep_t     rep;
    item_t[4] items;
}

struct meta_t {
    bit<8> last_val;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.rep);
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
        meta.last_val = (bit<8>)hdr.items.last.val;
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> mask = 0;
        bit<8> sum = 0;
        if (hdr.items[0].isValid()) {
            mask = mask | 1;
            sum = sum + (bit<8>)hdr.items[0].val;
        }
        if (hdr.items[1].isValid()) {
            mask = mask | 2;
            sum = sum + (bit<8>)hdr.items[1].val;
        }
        if (hdr.items[2].isValid()) {
            mask = mask | 4;
            sum = sum + (bit<8>)hdr.items[2].val;
        }
        if (hdr.items[3].isValid()) {
            mask = mask | 8;
            sum = sum + (bit<8>)hdr.items[3].val;
        }
        hdr.rep.mask = mask;
        hdr.rep.sum = sum;
        hdr.rep.last_val = meta.last_val;
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
