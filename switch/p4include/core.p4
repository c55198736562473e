/*
 * core.p4 -- the P4_16 core library, as shipped with the p4reduce front end.
 *
 * This is p4reduce's own text.  It is written from the P4_16 language
 * specification and is meant to be declaration-compatible with the core.p4
 * that p4c ships (p4c 1.2.5.x): every name, parameter direction, parameter
 * type, parameter order and type parameter below matches p4c's file, so a
 * program that compiles against one compiles the same way against the other
 * and gets the same P4Info.  Declaration order follows p4c's as well, since
 * it decides the order of error codes and match kinds.
 *
 * Licensed under the Apache License, Version 2.0 (see the project licence).
 */

#ifndef _CORE_P4_
#define _CORE_P4_

/*
 * The built-in error codes.  A program may add more codes with its own
 * `error { ... }` declarations; all of them share the one `error` namespace.
 */
error {
    NoError,                // nothing went wrong
    PacketTooShort,         // extract or lookahead ran past the end of the packet
    NoMatch,                // a select expression had no case for its key
    StackOutOfBounds,       // a header stack was indexed outside its size
    HeaderTooShort,         // a varbit field was given more bits than it can hold
    ParserTimeout,          // the target stopped a parser that ran too long
    ParserInvalidArgument   // a parser operation got an argument the target cannot handle
}

/*
 * The packet being parsed.  Only a parser receives one; the object keeps a
 * cursor into the packet, which starts at the first bit.
 */
extern packet_in {
    // Copy the bits under the cursor into the fixed-size header `hdr`, mark
    // it valid and move the cursor past it.  Applied to a header stack's
    // `next` element, also advances the stack.  Can raise PacketTooShort or
    // StackOutOfBounds.
    void extract<T>(out T hdr);

    // Same for a header that ends in (or contains) exactly one varbit
    // field; the second argument says how many bits that field takes in
    // this packet.  Can additionally raise HeaderTooShort.
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);

    // Read a value of the fixed-size type T from under the cursor without
    // moving the cursor.
    T lookahead<T>();

    // Move the cursor forward by the given number of bits.
    void advance(in bit<32> sizeInBits);

    // The whole packet's length in bytes.  Targets may leave this out.
    bit<32> length();
}

/*
 * The packet being built by a deparser.
 */
extern packet_out {
    // Append `hdr` to the outgoing packet.  T can be a header (appended only
    // when valid), a header stack or header union, or a struct of those, in
    // which case the members are emitted in declaration order.
    void emit<T>(in T hdr);
}

// Parser-only check: when `check` is false, the parser error becomes
// `toSignal` and the parser goes to its reject state.
extern void verify(in bool check, in error toSignal);

// The action that does nothing; tables fall back to it by default.
@noWarn("unused")
action NoAction() {}

/*
 * The match kinds every architecture knows.  Architectures may declare more
 * (v1model.p4 adds range, optional and selector).
 */
match_kind {
    exact,      // the key must equal the entry's value
    ternary,    // value and mask: only the bits set in the mask must agree
    lpm         // longest-prefix match: the entry with the longest matching prefix wins
}

// Compile-time assertion.  The compiler evaluates `check`; when it is false,
// compilation stops and `message` is reported.  The call yields a bool so it
// can initialise a constant, e.g.
//     const bool ok = static_assert(V1MODEL_VERSION >= 20200408, "need v1model 20200408");
extern bool static_assert(bool check, string message);

// As above, with the compiler's own failure message.
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
