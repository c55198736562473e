// parser_stack_push_pop: push_front(n) shifts elements towards higher indexes
// (the last n fall off, the first n become invalid); pop_front(n) shifts
// towards index 0 (the last n become invalid); emit(stack) emits the valid
// elements in index order.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8> op;     // 0 none, 1 push_front(1)+fill, 2 pop_front(1), 3 push_front(2)
    bit<8> mask;   // bit i = items[i].isValid() after the operation
}

header item_t {
    bit<7> val;
    bit<1> bos;
}

struct headers_t {
    rep_t     rep;
    item_t[3] items;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.rep);
        transition parse_item;
    }
    state parse_item {
        pkt.extract(hdr.items.next);
        transition select(hdr.items.last.bos) {
            1: accept;
            default: parse_item;
        }
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.rep.op == 1) {
            hdr.items.push_front(1);
            hdr.items[0].setValid();
            hdr.items[0].val = 0x7F;
            hdr.items[0].bos = 0;
        } else if (hdr.rep.op == 2) {
            hdr.items.pop_front(1);
        } else if (hdr.rep.op == 3) {
            hdr.items.push_front(2);
        }
        hdr.rep.mask = 0;
        if (hdr.items[0].isValid()) {
            hdr.rep.mask = hdr.rep.mask | 1;
        }
        if (hdr.items[1].isValid()) {
            hdr.rep.mask = hdr.rep.mask | 2;
        }
        if (hdr.items[2].isValid()) {
            hdr.rep.mask = hdr.rep.mask | 4;
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
        pkt.emit(hdr.rep);
        pkt.emit(hdr.items);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
