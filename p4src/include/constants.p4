/* Every number the p4reduce programs share, in one place. docs/protocol.md is the spec these
 * follow; change a value here and there together. */
#ifndef P4REDUCE_CONSTANTS_P4
#define P4REDUCE_CONSTANTS_P4

/* Elements per aggregation packet, fixed per build: 64 (default), 256 or 1024 (-DK=N).
 * 256 and 1024 are for software targets (BMv2, the embedded switch): a full K = 1024 frame is
 * 4,162 bytes, so links need a jumbo MTU, and Tofino's parser budget (512 bytes of headers per
 * pass) refuses anything above 64 (p4reduce-p4c --target-profile tofino says so). */
#ifndef K
#define K 64
#endif
#if K != 64 && K != 256 && K != 1024
#error "K (elements per packet) must be 64, 256 or 1024"
#endif

/* The UDP port the switch aggregates on (SwitchML's 0xBEE0); -DAGG_UDP_PORT=N changes it. */
#ifndef AGG_UDP_PORT
#define AGG_UDP_PORT 48864
#endif
const bit<16> AGG_PORT = AGG_UDP_PORT;

/* Ethernet / IPv4 */
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<16> ARP_HTYPE_ETHERNET = 1;
const bit<16> ARP_OPER_REQUEST = 1;
const bit<16> ARP_OPER_REPLY   = 2;
const bit<8>  RESULT_TTL = 64;

/* The aggregation header (docs/protocol.md, "Frame layout"). */
const bit<4> MSG_DENSE  = 1;
const bit<4> MSG_SPARSE = 2;
const bit<4> MSG_CONTROL = 3;  /* the controller's CLEAR / PEEK of one cell: CPU port only */
const bit<4> FLAG_RESULT     = 0x1;  /* set by the switch on every result */
const bit<4> FLAG_NO_PAYLOAD = 0x2;  /* no element payload follows (zero block / exponent only) */
const bit<4> FLAG_RETRANSMIT = 0x4;  /* a result unicast in answer to a retransmission */
const bit<4> FLAG_END        = 0x8;  /* sparse: the slot's stream has ended (min next = NEXT_END) */
const bit<32> NEXT_END = 0xFFFFFFFF;
/* The `nonfinite` byte: the sender's block held NaN / +Inf / -Inf (bits 7..3 reserved, sent 0).
 * The switch ORs the byte over the contributions; the hosts turn such a block into NaN (NF_NAN,
 * or both infinities) or the one infinity.
 * The switch only ORs the byte, so these are for the hosts and the docs (macros: no program
 * uses them, and p4c warns about unused constants). */
#define NF_NAN     0x1
#define NF_POS_INF 0x2
#define NF_NEG_INF 0x4

/* Control messages (docs/protocol.md, "Control messages"): a MSG_CONTROL packet that enters on
 * the CPU port (P4Runtime PacketOut) names one cell with its set and its absolute pool slot;
 * the op is in the rank field. The switch answers every one on the CPU port (PacketIn) with
 * the cell's state after the op. The same message from any other port is malformed. */
#ifndef CPU_PORT_NUMBER
#define CPU_PORT_NUMBER 510
#endif
const bit<9> CPU_PORT = CPU_PORT_NUMBER;
typedef bit<2> control_op_t;
const control_op_t OP_NONE  = 0;   /* an aggregation packet */
const control_op_t OP_CLEAR = 1;   /* zero the cell: its bitmap word, count, exponent, ..., lanes */
const control_op_t OP_PEEK  = 2;   /* read the cell, change nothing */
const bit<8> CTL_CLEAR = 1;        /* the rank field's values */
const bit<8> CTL_PEEK  = 2;

/* Sizes in bytes, for the length checks and the lengths of results. */
#define AGG_HEADER_BYTES 24
#define PAYLOAD_BYTES (4 * K)
const bit<16> UDP_LEN_EMPTY = 8 + AGG_HEADER_BYTES;
const bit<16> UDP_LEN_FULL  = 8 + AGG_HEADER_BYTES + PAYLOAD_BYTES;
const bit<16> IP_LEN_EMPTY  = 20 + 8 + AGG_HEADER_BYTES;
const bit<16> IP_LEN_FULL   = 20 + 8 + AGG_HEADER_BYTES + PAYLOAD_BYTES;
const bit<32> FRAME_LEN_EMPTY = 14 + 20 + 8 + AGG_HEADER_BYTES;
const bit<32> FRAME_LEN_FULL  = 14 + 20 + 8 + AGG_HEADER_BYTES + PAYLOAD_BYTES;

/* The slot pool: POOL_SLOTS slots, each with two sets (shadow copies); cell = slot * 2 + set. */
#define POOL_SLOTS 8192
#define POOL_CELLS (2 * POOL_SLOTS)
#define MAX_WORKERS 32            /* bitmap width */
#define MAX_JOBS 256              /* job index 0 is "no job": unknown job or sender */
#define WORKER_TABLE_SIZE 8192
#define REPLICA_TABLE_SIZE 8192
#define PORTS 512

/* Completion register: bits 5..0 count contributions, bit 7 says one of them had a payload. */
const bit<8> COUNT_MASK = 0x3F;
const bit<8> COUNT_HAS_DATA = 0x80;

/* Multicast groups: FLOOD_MGID floods ordinary L2 traffic; a job's group is chosen by the
 * controller (JOB_MGID_BASE + job index by convention) and carried by its worker entries. */
const bit<16> FLOOD_MGID = 1;

/* Ingress events, one per aggregation packet: job_counters[job index * 16 + event].
 * Events up to EV_RETRANSMIT_ANSWERED keep the packet (a result leaves); all others drop it. */
typedef bit<4> event_t;
const event_t EV_NONE                = 0;
const event_t EV_COMPLETION          = 1;  /* contribution that completed the slot: multicast */
const event_t EV_RETRANSMIT_ANSWERED = 2;  /* retransmission into a complete slot: unicast */
const event_t EV_CONTRIBUTION        = 3;  /* contribution absorbed into an open slot */
const event_t EV_DUPLICATE           = 4;  /* retransmission into an open slot: not added */
const event_t EV_UNKNOWN_SENDER      = 8;  /* (job id, source IP, source port) not registered */
const event_t EV_WRONG_RANK          = 9;  /* rank field differs from the registered rank */
const event_t EV_SLOT_RANGE          = 10; /* slot index outside the job's slot range */
const event_t EV_MALFORMED           = 11; /* wrong type, flags, length, or IPv4 checksum */
const event_t EV_LOSS                = 12; /* dropped by the loss simulator on arrival */
const event_t EV_BAD_KEY             = 13; /* registered sender, but not its job's key */
#define JOB_COUNTERS (MAX_JOBS * 16)

/* Egress events for results: egress_counters[job index * 4 + event]. */
typedef bit<2> egress_event_t;
const egress_event_t EG_RESULT_SENT = 0;   /* a result (multicast replica or unicast) left */
const egress_event_t EG_LOSS        = 1;   /* dropped by the loss simulator on departure */
const egress_event_t EG_NO_REPLICA  = 2;   /* a replica whose rank has no address entry */
#define EGRESS_COUNTERS (MAX_JOBS * 4)

#endif
