// signed_ops: int<W> arithmetic at the edges for the differential fuzz test (native vs
// Python): W = 64, 32, 12 and 8; comparisons, arithmetic shifts by run-time amounts,
// saturation, casts, signed action data, signed table keys, a signed register and a
// function with signed parameters and result.
#include <core.p4>
#include <v1model.p4>

header in_t {
    int<64> a;
    int<64> b;
    bit<64> u;
    bit<64> v;
    int<32> c;
    int<12> d;
    bit<4>  pad;
    bit<8>  s;       // shift amount
    int<8>  e;
}

header out_t {
    int<64> sum;
    int<64> sat_add;
    int<64> sat_sub;
    int<64> sar;
    int<64> shl;
    bit<64> usat_add;
    bit<64> usat_sub;
    int<32> c_sar;
    int<32> mul;
    int<12> d_neg;
    bit<4>  flags;
    bit<8>  cmp;
    int<16> cast16;
    bit<32> cast_u;
    int<64> fn;
    int<16> data;
    int<16> reg_old;
    bit<8>  hit;
}

struct headers_t {
    in_t  i;
    out_t o;
}

struct meta_t {
    int<16> k;
}

int<32> mix(in int<32> x, in int<12> y) {
    if (x < (int<32>)y) {
        return x - (int<32>)y;
    }
    return (x >> 3) |-| (int<32>)y;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.i);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<int<16>>(4) rs;

    action put(int<16> x) {
        hdr.o.data = x |+| (int<16>)hdr.i.e;
        hdr.o.hit = 1;
    }
    action put2(int<16> x, bit<8> y) {
        hdr.o.data = x - (int<16>)(int<8>)y;
        hdr.o.hit = 2;
    }
    table by_signed {
        key = { meta.k : ternary; hdr.i.e : range; }
        actions = { put; put2; NoAction; }
        default_action = NoAction();
    }
    // p4c-bm2-ss refuses negative action data in a default_action (-3: Negative values not
    // supported yet), so the negative constant lives in the action body
    action put_minus3() {
        hdr.o.data = -16s3 |+| (int<16>)hdr.i.e;
        hdr.o.hit = 1;
    }
    table by_exact {
        key = { hdr.i.e : exact; }
        actions = { put; put_minus3; NoAction; }
        default_action = put_minus3();
    }

    apply {
        hdr.o.setValid();
        hdr.o.sum = hdr.i.a + hdr.i.b;
        hdr.o.sat_add = hdr.i.a |+| hdr.i.b;
        hdr.o.sat_sub = hdr.i.a |-| hdr.i.b;
        hdr.o.sar = hdr.i.a >> hdr.i.s;
        hdr.o.shl = hdr.i.a << hdr.i.s;
        hdr.o.usat_add = hdr.i.u |+| hdr.i.v;
        hdr.o.usat_sub = hdr.i.u |-| hdr.i.v;
        hdr.o.c_sar = hdr.i.c >> (hdr.i.s & 31);
        hdr.o.mul = hdr.i.c * (int<32>)hdr.i.d;
        hdr.o.d_neg = -hdr.i.d;
        hdr.o.flags = (bit<4>)(~hdr.i.e)[3:0];
        bit<8> cmp = 0;
        if (hdr.i.a < hdr.i.b) { cmp = cmp | 1; }
        if (hdr.i.a >= 0) { cmp = cmp | 2; }
        if (hdr.i.u > hdr.i.v) { cmp = cmp | 4; }
        if (hdr.i.c <= -1) { cmp = cmp | 8; }
        if (hdr.i.d > -100) { cmp = cmp | 16; }
        if ((bit<16>)(int<16>)hdr.i.e < hdr.i.d[7:0] ++ 8w0) { cmp = cmp | 32; }
        if (hdr.i.a == -1) { cmp = cmp | 64; }
        if ((hdr.i.a >> 63) != 0) { cmp = cmp | 128; }
        hdr.o.cmp = cmp;
        hdr.o.cast16 = (int<16>)hdr.i.e + (int<16>)hdr.i.d;
        hdr.o.cast_u = (bit<32>)hdr.i.c;
        hdr.o.fn = (int<64>)mix(hdr.i.c, hdr.i.d);

        meta.k = (int<16>)hdr.i.d;
        hdr.o.hit = 0;
        if (!by_signed.apply().hit) {
            by_exact.apply();
        }
        bit<32> idx = (bit<32>)(hdr.i.s & 3);
        int<16> old;
        rs.read(old, idx);
        hdr.o.reg_old = old;
        rs.write(idx, old + hdr.o.data);
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
        pkt.emit(hdr.i);
        pkt.emit(hdr.o);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
