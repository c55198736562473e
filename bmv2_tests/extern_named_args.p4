// extern_named_args: calls with named arguments, written in another order than
// the parameters, bind each argument by name (verify_checksum, update_checksum,
// hash, register read/write, random, counter, mark_to_drop, an action
// call and an extern's constructor), including list expressions `{ ... }`.
// (digest is left out: p4c 1.2.5 crashes on digest(data = ..., receiver = ...),
// "Compiler Bug: Two parameters with the same name receiver in a substitution".)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<16> csum;     // checked over a, b by verify_checksum
    bit<16> csum2;    // rewritten over a, b, c by update_checksum
    bit<32> hsh;      // hash(identity) of a ++ b: 5 + (a ++ b) % 1000
    bit<16> reg;      // c written to r[2] and read back
    bit<8>  rnd;      // random(7, 7)
    bit<8>  diff;     // sub(y = 3, x = a) = a - 3
    bit<8>  cksum_err;
}

struct headers_t { h_t h; }
struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr = hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(checksum = hdr.h.csum,
                        data = { hdr.h.a, hdr.h.b },
                        algo = HashAlgorithm.csum16,
                        condition = hdr.h.isValid());
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<16>>(size = 4) r;
    counter(type = CounterType.packets, size = 2) cnt;

    action sub(bit<8> x, bit<8> y) {
        hdr.h.diff = x - y;
    }

    apply {
        hdr.h.cksum_err = (bit<8>)sm.checksum_error;
        hash(max = 32w1000, data = { hdr.h.a, hdr.h.b }, base = 32w5,
             algo = HashAlgorithm.identity, result = hdr.h.hsh);
        r.write(value = hdr.h.c, index = 2);
        r.read(index = 2, result = hdr.h.reg);
        random(hi = 8w7, result = hdr.h.rnd, lo = 8w7);
        cnt.count(index = 1);
        sub(y = 8w3, x = hdr.h.a);
        sm.egress_spec = 1;
        if (hdr.h.a == 0xFF) {
            mark_to_drop(standard_metadata = sm);
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(algo = HashAlgorithm.csum16,
                        checksum = hdr.h.csum2,
                        condition = true,
                        data = { hdr.h.a, hdr.h.b, hdr.h.c });
    }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr = hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
