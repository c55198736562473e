/* Per-replica address rewriting of a multicast result: the replication id is the worker's
 * rank, and (job index, rank) names the worker's MAC, IPv4 address and UDP port. A replica
 * without an entry is dropped. */
#ifndef P4REDUCE_REPLICA_P4
#define P4REDUCE_REPLICA_P4

#include "headers.p4"

control ReplicaRewrite(inout headers_t hdr, in metadata_t meta, in standard_metadata_t sm,
                       out bit<1> missing) {
    action to_worker(bit<48> mac, bit<32> ip, bit<16> udp_port) {
        hdr.ethernet.dstAddr = mac;
        hdr.ipv4.dstAddr = ip;
        hdr.udp.dstPort = udp_port;
        missing = 0;
    }
    action no_worker() {
        missing = 1;
    }
    table replicas {
        key = {
            meta.job_index: exact;
            sm.egress_rid: exact;
        }
        actions = { to_worker; no_worker; }
        default_action = no_worker();
        size = REPLICA_TABLE_SIZE;
    }
    apply {
        missing = 1;
        replicas.apply();
    }
}

#endif
