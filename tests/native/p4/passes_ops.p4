// passes_ops: clone, resubmit, recirculate and multicast in one program, for the differential
// fuzz test (native vs Python) and the sanitizer test. Every choice comes from the packet: the
// clone session (a clone session the control plane adds, changes and deletes at random), the
// @field_list index (known or not), the multicast group, the egress port, how many passes,
// truncation. Egress writes what each pass saw (instance_type, egress_rid, preserved and
// reset metadata, packet_length) and a register sequence number into the packet, so the frames
// show the order in which the passes ran. loops = 0xFF loops until the 1000-pass limit.
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> op;       // 0: I2E clone (field list fl), 1: I2E clone, 2: I2E clone (list 4), 3: resubmit
                     // (field list), 4: resubmit (list 5), 5: drop, 6: E2E clone, 7: recirculate
    bit<8> session;
    bit<8> fl;
    bit<8> grp;
    bit<8> port;     // 0x7f: dropped in egress
    bit<8> loops;    // passes wanted (& 3), 0xFF: for ever; 0x80 set: a digest per ingress
    bit<8> trunc;    // truncate(trunc) in ingress when not 0
}

header obs_t {
    bit<32> inst;
    bit<16> rid;
    bit<16> iport;
    bit<8>  keep1;
    bit<8>  keep2;
    bit<8>  lose;
    bit<8>  passes;
    bit<32> seq;
    bit<32> plen;
}

struct headers_t {
    ctl_t ctl;
    obs_t obs;
}

struct meta_t {
    @field_list(1, 5)
    bit<8> keep1;
    @field_list(1, 2, 6)
    bit<8> keep2;
    @field_list(4)
    bit<8> lose;
    @field_list(1, 2, 3, 5, 6)
    bit<8> passes;
}

struct pass_digest_t {
    bit<8> passes;
    bit<8> keep1;
    bit<9> port;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(2) seq;

    apply {
        bit<32> c;
        seq.read(c, 0);
        seq.write(0, c + 1);
        if (!hdr.ctl.isValid()) {
            sm.egress_spec = 1;
        } else {
            meta.passes = meta.passes + 1;
            meta.keep1 = hdr.ctl.op;
            meta.lose = 0x5a;
            if (meta.keep2 == 0) {
                meta.keep2 = hdr.ctl.session;
            }
            sm.egress_spec = (bit<9>)hdr.ctl.port;
            if (hdr.ctl.grp != 0) {
                sm.mcast_grp = (bit<16>)hdr.ctl.grp;
            }
            bool again = hdr.ctl.loops == 0xFF || meta.passes <= (hdr.ctl.loops & 3);
            if (hdr.ctl.op & 0x01 != 0) {
                // p4c takes the field list index only as a compile-time constant
                bit<32> ses = (bit<32>)hdr.ctl.session;
                if (hdr.ctl.fl == 1) {
                    clone_preserving_field_list(CloneType.I2E, ses, 1);
                } else if (hdr.ctl.fl == 2) {
                    clone_preserving_field_list(CloneType.I2E, ses, 2);
                } else if (hdr.ctl.fl == 3) {
                    clone_preserving_field_list(CloneType.I2E, ses, 3);
                } else {
                    clone_preserving_field_list(CloneType.I2E, ses, 0);  // no such list
                }
            }
            if (hdr.ctl.op & 0x02 != 0) {
                clone(CloneType.I2E, (bit<32>)hdr.ctl.session + 1);
            }
            if (hdr.ctl.op & 0x04 != 0) {
                // p4c-bm2-ss 1.2.5 knows no clone3/resubmit/recirculate with data: field lists 4-6
                clone_preserving_field_list(CloneType.I2E, (bit<32>)hdr.ctl.session, 4);
            }
            if (hdr.ctl.op & 0x08 != 0 && again) {
                if (hdr.ctl.fl & 2 != 0) {
                    resubmit_preserving_field_list(3);
                } else {
                    resubmit_preserving_field_list(1);
                }
            }
            if (hdr.ctl.op & 0x10 != 0 && again) {
                resubmit_preserving_field_list(5);
            }
            if (hdr.ctl.op & 0x20 != 0) {
                mark_to_drop(sm);
            }
            if (hdr.ctl.trunc != 0) {
                truncate((bit<32>)hdr.ctl.trunc);
            }
            if (hdr.ctl.loops & 0x80 != 0 && hdr.ctl.loops != 0xFF) {
                digest<pass_digest_t>(1, {meta.passes, meta.keep1, sm.ingress_port});
            }
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(1) eseq;

    apply {
        bit<32> c;
        eseq.read(c, 0);
        eseq.write(0, c + 1);
        hdr.obs.setValid();
        hdr.obs.inst = sm.instance_type;
        hdr.obs.rid = sm.egress_rid;
        hdr.obs.iport = (bit<16>)sm.ingress_port;
        hdr.obs.keep1 = meta.keep1;
        hdr.obs.keep2 = meta.keep2;
        hdr.obs.lose = meta.lose;
        hdr.obs.passes = meta.passes;
        hdr.obs.seq = c;
        hdr.obs.plen = sm.packet_length;
        if (hdr.ctl.isValid()) {
            bool again = hdr.ctl.loops == 0xFF || meta.passes <= (hdr.ctl.loops & 3);
            if (hdr.ctl.op & 0x40 != 0 && sm.instance_type != 2) {
                bit<32> ses = (bit<32>)hdr.ctl.session;
                if (hdr.ctl.fl & 3 == 1) {
                    clone_preserving_field_list(CloneType.E2E, ses, 1);
                } else if (hdr.ctl.fl & 3 == 2) {
                    clone_preserving_field_list(CloneType.E2E, ses, 2);
                } else if (hdr.ctl.fl & 3 == 3) {
                    clone_preserving_field_list(CloneType.E2E, ses, 3);
                } else {
                    clone_preserving_field_list(CloneType.E2E, ses, 0);
                }
            }
            if (hdr.ctl.op & 0x80 != 0 && again) {
                if (hdr.ctl.fl & 0x80 != 0) {
                    recirculate_preserving_field_list(6);
                } else {
                    if (hdr.ctl.fl & 2 != 0) {
                        recirculate_preserving_field_list(3);
                    } else {
                        recirculate_preserving_field_list(1);
                    }
                }
            }
            if (hdr.ctl.port == 0x7f) {
                mark_to_drop(sm);
            }
        }
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.obs);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
