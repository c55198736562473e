// stack_ops: header stacks indexed at run time, for the differential fuzz test (native vs
// Python): extraction into .next until a bottom-of-stack bit (StackOutOfBounds past the
// size), .last and .lastIndex, hs[i] with a run-time i read and written (an index past the
// end reads an invalid header and loses the write, as p4c's BMv2 back end does),
// push_front/pop_front, and a table keyed on an element picked at run time.
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> i;      // run-time index
    bit<8> j;
    bit<8> op;
    bit<8> res;
}

header item_t {
    bit<7> val;
    bit<1> bos;
}

struct headers_t {
    ctl_t     c;
    item_t[4] s;
}

struct meta_t {
    bit<7>  picked;
    bit<32> last;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.c);
        transition parse_item;
    }
    state parse_item {
        pkt.extract(hdr.s.next);
        transition select(hdr.s.last.bos) {
            1: done;
            default: parse_item;
        }
    }
    state done {
        meta.last = hdr.s.lastIndex;
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_val(bit<7> v) {
        hdr.s[hdr.c.j].val = v;
    }
    table by_elem {
        key = { hdr.s[hdr.c.i].val : exact; hdr.s[hdr.c.i].isValid() : exact; }
        actions = { set_val; NoAction; }
        default_action = NoAction();
    }

    apply {
        meta.picked = hdr.s[hdr.c.i].val;
        hdr.c.res = (bit<8>)meta.picked;
        if (hdr.s[hdr.c.j].isValid()) {
            hdr.c.res = hdr.c.res | 128;
        }
        hdr.s[hdr.c.j].val = hdr.s[hdr.c.j].val + 1;
        if (hdr.c.op == 1) {
            hdr.s.push_front(1);
            hdr.s[0].setValid();
            hdr.s[0].val = (bit<7>)hdr.c.i;
            hdr.s[0].bos = 0;
        } else if (hdr.c.op == 2) {
            hdr.s.pop_front(1);
        } else if (hdr.c.op == 3) {
            hdr.s[hdr.c.i].setInvalid();
        } else if (hdr.c.op == 4) {
            hdr.s[hdr.c.i] = hdr.s[hdr.c.j];
        }
        by_elem.apply();
        hdr.c.j = (bit<8>)meta.last;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.c);
        pkt.emit(hdr.s);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
