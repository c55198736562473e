// Digests of values that are not structs (issue 19): each call below becomes one P4Info
// digest, named by its type argument when that is a named type, else digest_N. A header is
// not among them: p4c-bm2-ss refuses a digest of a header type ("expected a struct type"),
// and so does our front end; the header's fields go as a struct built from them.
#include <core.p4>
#include <v1model.p4>

typedef bit<32> addr_t;
type bit<16> vlan_t;
enum bit<8> Kind { LEARN = 1, AGE = 2 }

header eth_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

struct eth_key_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

struct headers_t {
    eth_t eth;
}

struct meta_t {
    bit<32> x;
    addr_t a;
    vlan_t v;
    Kind k;
    int<8> s;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply {} }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action learn() {
        digest<bit<32>>(1, meta.x);                    // digest_0: bit<32>
    }
    table learn_table {
        key = { hdr.eth.dst: exact; }
        actions = { learn; }
        default_action = learn();
    }
    apply {
        meta.x = hdr.eth.src[31:0];
        meta.a = 32w0x0A000001;
        meta.v = (vlan_t)hdr.eth.type;
        meta.k = Kind.AGE;
        meta.s = -8s3;
        learn_table.apply();
        digest<addr_t>(2, meta.a);                     // addr_t: the typedef's name
        digest<eth_key_t>(3, {hdr.eth.dst, hdr.eth.src, hdr.eth.type}); // eth_key_t: a struct
        digest(4, {hdr.eth.src, sm.ingress_port});     // digest_1: tuple<bit<48>, bit<9>>
        digest<tuple<int<8>, bool>>(5, {meta.s, true}); // digest_2
        digest(6, meta.v);                             // vlan_t: a `type`
        digest(7, meta.k);                             // Kind: a serializable enum
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {}
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply {} }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
