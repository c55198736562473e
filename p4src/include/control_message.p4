/* The controller's control messages (docs/protocol.md, "Control messages"): a MSG_CONTROL
 * packet that entered on the CPU port (a P4Runtime PacketOut) names one cell, its set and its
 * absolute pool slot, and the op in the rank field: CTL_CLEAR zeroes the cell, CTL_PEEK reads
 * it. It then takes the aggregation steps like a contribution, each step's one access to its
 * register doing the op (so Tofino's one-access rule holds), and ResultDispatch sends it back
 * to the CPU port with the cell's state. Only the CPU port is trusted: the same message from
 * any other port never gets here (Admission finds it malformed), so workers can neither clear
 * nor read slots. This is the way to the slot state on targets whose P4Runtime server has no
 * RegisterEntry (BMv2's simple_switch_grpc). */
#ifndef P4REDUCE_CONTROL_MESSAGE_P4
#define P4REDUCE_CONTROL_MESSAGE_P4

#include "headers.p4"

control ControlMessage(inout headers_t hdr, inout metadata_t meta, in standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == CPU_PORT && hdr.agg.msgType == MSG_CONTROL) {
            meta.from_controller = 1;
            if (hdr.agg.rank == CTL_CLEAR) {
                meta.op = OP_CLEAR;
            } else if (hdr.agg.rank == CTL_PEEK) {
                meta.op = OP_PEEK;
            }
            bool has_payload = (hdr.agg.flags & FLAG_NO_PAYLOAD) == 0;
            if (meta.op == OP_NONE
                    || (hdr.agg.flags & (FLAG_RESULT | FLAG_RETRANSMIT | FLAG_END)) != 0
                    || (has_payload && !hdr.data.isValid())
                    || (bit<16>)hdr.agg.slot >= POOL_SLOTS) {
                meta.event = EV_MALFORMED;
            } else {
                meta.slot_abs = (bit<32>)hdr.agg.slot;
                meta.cell = (meta.slot_abs << 1) | (bit<32>)hdr.agg.set;
                /* a clear goes the "first contribution" way of the steps: it writes these */
                hdr.agg.exponent = 0;
                hdr.agg.nonfinite = 0;
                hdr.agg.next = 0;
            }
        }
    }
}

#endif
