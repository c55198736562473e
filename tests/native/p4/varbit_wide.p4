// varbit_wide: varbit fields and values wider than 64 bits, for the differential fuzz test
// (native vs Python) and the sanitizer fuzz: a varbit<200> between fixed fields (their bit
// offsets known only at run time), its length from the packet (not whole bytes:
// ParserInvalidArgument; past the packet: PacketTooShort; over 200 bits: HeaderTooShort),
// header copies and setValid/setInvalid of varbit headers (packet length changes with the
// varbit's width), header equality, a CRC over a field list with the varbit and a bit<136>,
// and bit<136>/bit<72> arithmetic, slices, comparisons and a run-time shift.
#include <core.p4>
#include <v1model.p4>

header len_t {
    bit<8> n;
    bit<8> op;
}

header opt_t {
    bit<4>      k;
    bit<4>      j;
    varbit<200> data;
    bit<8>      after;
}

header wide_t {
    bit<136> x;
    bit<72>  y;
}

header res_t {
    bit<32> h;
    bit<8>  eq;
    bit<32> plen;
}

struct headers_t {
    len_t  len;
    opt_t  opt;
    opt_t  opt2;
    wide_t w;
    res_t  res;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>)(hdr.len.n & 0xF8) | (bit<32>)hdr.len.op[7:7]);
        transition select(hdr.len.op[0:0]) {
            1: wide;
            default: accept;
        }
    }
    state wide {
        pkt.extract(hdr.w);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.len.op[1:1] == 1) {
            hdr.opt2 = hdr.opt;
        }
        if (hdr.len.op[2:2] == 1) {
            hdr.opt.setInvalid();
        }
        if (hdr.len.op[3:3] == 1) {
            hdr.opt2.setValid();
        }
        if (hdr.w.isValid()) {
            hdr.w.x = hdr.w.x + (bit<136>)hdr.w.y * 3;
            hdr.w.y = hdr.w.x[100:29] ^ (hdr.w.y >> hdr.len.n);
            if (hdr.w.x > (bit<136>)hdr.w.y << 64) {
                hdr.w.y = ~hdr.w.y;
            }
        }
        hdr.res.setValid();
        hash(hdr.res.h, HashAlgorithm.crc32, 32w0, { hdr.opt.data, hdr.opt.k, hdr.w.x },
             33w0x100000000);
        hdr.res.eq = (hdr.opt == hdr.opt2) ? 8w1 : 8w0;
        hdr.res.plen = sm.packet_length;
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
        pkt.emit(hdr.opt2);
        pkt.emit(hdr.w);
        pkt.emit(hdr.res);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
