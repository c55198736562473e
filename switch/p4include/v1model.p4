/*
 * v1model.p4 -- the v1model architecture (the P4_16 rendering of the P4_14
 * "v1.0 switch"), as shipped with the p4reduce front end.
 *
 * This is p4reduce's own text.  It is written from the P4_16 specification
 * and the BMv2 simple_switch documentation, and is meant to be
 * declaration-compatible with the v1model.p4 that p4c ships (p4c 1.2.5.x):
 * the same types, enums and members, externs, methods, parameter names,
 * directions, types and order, the same type parameters and the same
 * annotations (which feed P4Info and the BMv2 JSON).  Declarations appear in
 * p4c's order.
 *
 * Versions.  Define V1MODEL_VERSION before including this file to pick the
 * flavour of the architecture:
 *
 *   20180101 (the default)  indexes of counter, meter and register are
 *                           bit<32>; the port fields of standard_metadata_t
 *                           are bit<9>.
 *   20200408                counter<I>, meter<I> and register<T, I> take the
 *                           index type as a type parameter (usually
 *                           inferred from the call), and the port fields use
 *                           the typedef PortId_t (bit<9>).
 *
 * The chosen version is also visible to the program as the constant
 * __v1model_version, which is how a compiler back end learns it.
 *
 * Licensed under the Apache License, Version 2.0 (see the project licence).
 */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

/* Extra match kinds of this architecture. */
match_kind {
    range,      // the key lies in an inclusive [low, high] interval
    optional,   // either an exact match or "don't care" (matches anything)
    selector    // key fields fed to an action_selector's hash
}

/* The architecture version in effect, for the compiler back end. */
const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;    // a port number as simple_switch sees it
#endif

/*
 * Per-packet intrinsic metadata.  The fields marked @alias live, inside
 * BMv2, under another name (queueing_metadata.* or intrinsic_metadata.*);
 * the alias is written to the field_aliases section of the BMv2 JSON.
 * Reading or writing a field that simple_switch does not use is harmless.
 */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;      // port the packet came in on
    PortId_t egress_spec;       // output port chosen in ingress (511 = drop in simple_switch)
    PortId_t egress_port;       // output port actually in use; meaningful in egress only
#else
    bit<9>   ingress_port;
    bit<9>   egress_spec;
    bit<9>   egress_port;
#endif
    bit<32>  instance_type;     // normal, clone, resubmit, recirculate, replication copy, ...
    bit<32>  packet_length;     // packet size in bytes

    // Queueing information, filled in when the packet leaves the traffic
    // manager; meaningful in egress only.
    @alias("queueing_metadata.enq_timestamp")
    bit<32>  enq_timestamp;     // microseconds, when the packet was queued
    @alias("queueing_metadata.enq_qdepth")
    bit<19>  enq_qdepth;        // queue depth (packets) at enqueue
    @alias("queueing_metadata.deq_timedelta")
    bit<32>  deq_timedelta;     // microseconds spent in the queue
    @alias("queueing_metadata.deq_qdepth")
    bit<19>  deq_qdepth;        // queue depth (packets) at dequeue

    // Other intrinsic metadata.
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48>  ingress_global_timestamp;  // microseconds, when ingress began
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48>  egress_global_timestamp;   // microseconds, when egress began
    @alias("intrinsic_metadata.mcast_grp")
    bit<16>  mcast_grp;         // nonzero: replicate to this multicast group
    @alias("intrinsic_metadata.egress_rid")
    bit<16>  egress_rid;        // replication id of a multicast copy
    bit<1>   checksum_error;    // 1 when a verify_checksum call found a mismatch
    error    parser_error;      // what the parser ended with (error.NoError if fine)
    @alias("intrinsic_metadata.priority")
    bit<3>   priority;          // priority queue to use, when enabled
}

/* What a counter cell keeps. */
enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

/* What a meter measures. */
enum MeterType {
    packets,
    bytes
}

/*
 * counter: an array of `size` counter cells, indexed 0 .. size-1, that the
 * data plane can only increment and the control plane can read and reset.
 * count(index) adds the packet (and/or its length in bytes) to one cell;
 * an index >= size updates nothing.
 */
#if V1MODEL_VERSION >= 20200408
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}
#else
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}
#endif

/*
 * direct_counter: one counter cell per entry of the single table that names
 * it in its `counters` property.  The matched entry's cell is updated on
 * every hit whether or not an action calls count().
 */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* The color values written by meter.execute_meter and direct_meter.read. */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/*
 * meter: an array of `size` two-rate three-color meters (RFC 2698), indexed
 * 0 .. size-1, whose rates the control plane sets.  execute_meter(index,
 * result) updates one meter and writes its color (0 green, 1 yellow, 2 red)
 * to `result`, which must be bit<W> with W >= 2.  For an index >= size the
 * value left in `result` is unspecified.
 */
#if V1MODEL_VERSION >= 20200408
extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}
#else
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}
#endif

/*
 * direct_meter: one meter per entry of the single table that names it in
 * its `meters` property; the matched entry's meter runs on every hit.
 * read(result), allowed only in that table's actions, gives the color.
 */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/*
 * register: an array of `size` cells of type T (bit<W> in simple_switch),
 * indexed 0 .. size-1, that both the data plane and the control plane can
 * read and write.  A read with an index >= size leaves `result` unspecified;
 * a write with such an index changes nothing.  A read-modify-write is only
 * atomic with respect to other packets inside an @atomic block.
 */
#if V1MODEL_VERSION >= 20200408
extern register<T, I> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in I index);
    void write(in I index, in T value);
}
#else
extern register<T> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}
#endif

/*
 * action_profile: a table implementation (table property `implementation`)
 * in which table entries point at members of a shared pool of `size`
 * action invocations, managed by the control plane.
 */
extern action_profile {
    action_profile(bit<32> size);
}

/*
 * Write a uniformly distributed random value in lo .. hi (inclusive) to
 * `result`; unspecified when lo > hi.  T must be bit<W>.
 */
extern void random<T>(out T result, in T lo, in T hi);

/*
 * Send the control plane a small message with the current values of `data`
 * (usually a struct; its type name becomes the digest's name in P4Info).
 * Ingress only.  simple_switch ignores `receiver`.
 */
extern void digest<T>(in bit<32> receiver, in T data);

/* Hash and checksum algorithms. */
enum HashAlgorithm {
    crc32,
    crc32_custom,   // CRC-32 with parameters the control plane may change
    crc16,
    crc16_custom,   // CRC-16 with parameters the control plane may change
    random,
    identity,       // the input bits themselves, truncated
    csum16,         // the 16-bit ones'-complement Internet checksum
    xor16           // 16-bit XOR of the input
}

/* Old form, kept for source compatibility. */
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/*
 * Arrange for the packet to be dropped: sets standard_metadata.egress_spec
 * to the target's drop port (511 in simple_switch) and mcast_grp to 0.
 * Later assignments to those fields undo it.
 */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/*
 * result = base + (hash(algo, data) mod max), or just base when max is 0.
 * O, T and M must be bit<W> types (widths may differ); D is normally a
 * list/tuple of bit<W> or int<W> fields.
 */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/*
 * action_selector: an action profile whose entries may point at groups of
 * members; a member is picked per packet by hashing the table's `selector`
 * key fields with `algorithm`, keeping `outputWidth` bits of the hash.
 */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

/* Where a clone is taken: from ingress to egress, or from egress to egress. */
enum CloneType {
    I2E,
    E2E
}

/* Object-style checksum of old programs. */
@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/*
 * Checksums.  They may only be called in the VerifyChecksum (verify_*) and
 * ComputeChecksum (update_*) controls.  T is a list/tuple of bit-fields
 * (varbits allowed) whose total length is a multiple of O's width; O is
 * bit<W>; `algo` must be a compile-time constant.  With `condition` false,
 * verification always passes and the update leaves `checksum` alone.
 *
 * verify_checksum: when the checksum of `data` differs from `checksum`,
 * standard_metadata.checksum_error is 1 when ingress starts.
 */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* update_checksum: store the checksum of `data` into `checksum`. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/*
 * The _with_payload variants also cover the payload, i.e. every byte of the
 * packet after the parsed headers (as for TCP and UDP checksums).
 */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/*
 * Request a clone of the packet through clone session `session` (I2E from
 * ingress, E2E from egress).  The copy goes to egress with the port/group
 * the session is configured with; no user metadata is preserved.
 */
extern void clone(in CloneType type, in bit<32> session);

/* Old form of resubmit: preserves the fields listed in `data`. */
@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);

/*
 * At the end of ingress, send the original packet through ingress again,
 * preserving the user metadata fields annotated @field_list(index).
 */
extern void resubmit_preserving_field_list(bit<8> index);

/* Old form of recirculate: preserves the fields listed in `data`. */
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);

/*
 * At the end of egress, feed the deparsed packet back into the parser,
 * preserving the user metadata fields annotated @field_list(index).
 */
extern void recirculate_preserving_field_list(bit<8> index);

/* Old form of clone with preserved fields. */
@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/*
 * Like clone, but the copy keeps the user metadata fields annotated
 * @field_list(index).
 */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Cut the outgoing packet down to at most `length` bytes. */
extern void truncate(in bit<32> length);

/*
 * Run-time checks.  When `check` is false, simple_switch logs which check
 * failed and stops.  assume() additionally tells verification tools that
 * the condition may be taken as given.  p4c's --ndebug option compiles
 * both away.
 */
extern void assert(in bool check);
extern void assume(in bool check);

/*
 * Write a message to the switch log.  In the second form, each "{}" in
 * `msg` is replaced by the next field of `data` (a list of values).
 */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/*
 * The programmable blocks of the pipeline.  H is a struct whose members are
 * headers, header stacks or header unions; M is a struct of user metadata.
 * The name standard_metadata is reserved for the architecture's struct.
 */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

/* May contain only block statements, verify_checksum* calls and returns. */
control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

/* May contain only block statements, update_checksum* calls and returns. */
control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

/* May contain only packet_out.emit calls. */
@deparser
control Deparser<H>(packet_out b, in H hdr);

/* The switch: the six blocks, in pipeline order. */
package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif  /* _V1_MODEL_P4_ */
