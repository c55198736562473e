/* p4reduce: Sparse block aggregation (OmniReduce's scheme in its switch-friendly form): per slot the
 * switch also keeps the minimum of the workers' next non-zero block, and blocks zero on every
 * worker never travel. Zero blocks a worker must still acknowledge come header-only.
 * The wire protocol and the switch rules are specified in docs/protocol.md.
 * Compile: p4reduce-p4c -I p4src/include [-DK=256] p4src/sparse.p4 (or p4c --target bmv2). */
#include <core.p4>
#include <v1model.p4>

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/checksum.p4"
#include "include/local_address.p4"
#include "include/control_message.p4"
#include "include/admission.p4"
#include "include/ingress_loss.p4"
#include "include/bitmap.p4"
#include "include/completion.p4"
#include "include/exponent.p4"
#include "include/nonfinite.p4"
#include "include/next_min.p4"
#include "include/accumulate.p4"
#include "include/dispatch.p4"
#include "include/ingress_stats.p4"
#include "include/arp.p4"
#include "include/forwarding.p4"
#include "include/egress.p4"
#include "include/deparser.p4"

control SwitchIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    LocalAddress() local_address;
    ControlMessage() control_message;
    Admission(MSG_SPARSE) admission;
    IngressLoss() loss;
    WorkerBitmap() bitmap;
    Completion() completion;
    ExponentMax() exponent;
    NonFiniteOr() nonfinite;
    NextMin() next_min;
    Accumulate() accumulate;
    ResultDispatch() dispatch;
    IngressStats() stats;
    ArpResponder() arp;
    Forwarding() forwarding;

    apply {
        if (hdr.ipv4.isValid()) {
            local_address.apply(hdr, meta);
        }
        if (hdr.agg.isValid()) {
            /* the controller's clear / peek of one cell, from the CPU port only */
            control_message.apply(hdr, meta, sm);
        }
        if (meta.to_switch == 1 || meta.from_controller == 1) {
            if (hdr.agg.isValid()) {
                if (meta.from_controller == 0) {
                    admission.apply(hdr, meta, sm);
                    if (meta.event == EV_NONE) {
                        loss.apply(meta, sm);
                    }
                }
                if (meta.event == EV_NONE) {
                    /* Each step is one read-modify-write of its registers at this cell. */
                    bitmap.apply(hdr, meta);
                    completion.apply(hdr, meta);
                    exponent.apply(hdr, meta);
                    nonfinite.apply(hdr, meta);
                    next_min.apply(hdr, meta);
                    accumulate.apply(hdr, meta);
                    dispatch.apply(hdr, meta, sm);
                }
                stats.apply(meta, sm);
            } else {
                /* the switch answers ARP and aggregation; other traffic to it is dropped */
                mark_to_drop(sm);
            }
        } else {
            bool answered = false;
            if (hdr.arp.isValid()) {
                arp.apply(hdr, sm, answered);
            }
            if (!answered) {
                forwarding.apply(hdr, meta, sm);
            }
        }
    }
}

V1Switch(P4ReduceParser(), P4ReduceVerifyChecksum(), SwitchIngress(), SwitchEgress(),
         P4ReduceComputeChecksum(), P4ReduceDeparser()) main;
