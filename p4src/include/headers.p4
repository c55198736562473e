/* Packet headers and the user metadata of the p4reduce programs (docs/protocol.md). */
#ifndef P4REDUCE_HEADERS_P4
#define P4REDUCE_HEADERS_P4

#include "constants.p4"
#include "elements.p4"

header ethernet_h {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header arp_h {
    bit<16> htype;
    bit<16> ptype;
    bit<8>  hlen;
    bit<8>  plen;
    bit<16> oper;
    bit<48> sha;
    bit<32> spa;
    bit<48> tha;
    bit<32> tpa;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_h {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

/* The aggregation header: 24 bytes, big-endian (docs/protocol.md, "Aggregation header"). */
header agg_h {
    bit<4>  msgType;   /* MSG_DENSE, MSG_SPARSE or MSG_CONTROL */
    bit<4>  flags;     /* FLAG_RESULT | FLAG_NO_PAYLOAD | FLAG_RETRANSMIT | FLAG_END */
    bit<8>  rank;      /* sender's rank in the job, 0..31 */
    bit<16> jobId;     /* the job, as registered with the controller */
    bit<1>  set;       /* shadow set of the slot */
    bit<15> slot;      /* slot index relative to the job's slot range */
    bit<8>  exponent;  /* biased block exponent (0 = none); results carry the maximum */
    bit<8>  nonfinite; /* NF_* bits of the sender's block; results: the OR over the workers */
    bit<32> packetId;  /* opaque to the switch, echoed */
    bit<32> block;     /* sparse: block index; dense: opaque, echoed */
    bit<32> next;      /* sparse: sender's next non-zero block of this slot; results: the minimum */
    bit<32> key;       /* the job's key, installed with its admission entries; echoed */
}

#define ELEMENT_FIELD(i) bit<32> e##i;
/* K big-endian two's-complement int32 elements, summed lane by lane. */
header agg_data_h {
    FOR_EACH_ELEMENT(ELEMENT_FIELD)
}

struct headers_t {
    ethernet_h ethernet;
    arp_h      arp;
    ipv4_h     ipv4;
    udp_h      udp;
    agg_h      agg;
    agg_data_h data;
}

/* What admission learns about the sender and what the aggregation steps hand each other. */
struct metadata_t {
    bit<8>  job_index;     /* 1..MAX_JOBS-1 once admitted; 0 = no job */
    bit<8>  n_workers;
    bit<32> worker_bit;    /* 1 << rank */
    bit<16> mgid;          /* the job's multicast group */
    bit<32> cell;          /* absolute slot * 2 + set */
    bit<32> slot_abs;      /* absolute slot */
    bit<1>  first;         /* first contribution to this (slot, set): overwrite */
    bit<1>  dup;           /* sender already contributed to this (slot, set) */
    bit<1>  complete;      /* every (local) worker has contributed */
    bit<1>  stored;        /* ToR role: the parent's result is stored in the cell */
    bit<1>  has_data;      /* some contribution carried a payload */
    bit<1>  to_switch;     /* IPv4 destination is the switch */
    bit<48> switch_mac;    /* the switch's MAC, the source of every result */
    bit<1>  is_result;     /* leaves as an aggregation result */
    bit<1>  multicast;     /* a multicast result: egress rewrites the destination per rank */
    bit<1>  flooded;       /* ordinary traffic flooded: never back out of its ingress port */
    bit<1>  ip_changed;    /* the IPv4 header was rewritten: recompute its checksum */
    event_t event;         /* what happened to an aggregation packet (constants.p4) */
    bit<1>  from_controller; /* a control message from the CPU port (control_message.p4) */
    control_op_t op;       /* OP_CLEAR or OP_PEEK (control); OP_DOWN (parent's result); else OP_NONE */
    bit<32> bitmap_word;   /* the cell's bitmap word after the update (control answers) */
    bit<8>  count;         /* the cell's count byte after the update (control answers) */
}

#endif
