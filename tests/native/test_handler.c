/* A tiny handler of the p4r_handler.h contract, to test the native I/O loop before (and
 * independently of) the native engine. What it does with a frame is chosen by the first UDP
 * payload byte of an Ethernet/IPv4(no options)/UDP frame (offset 42); anything else reflects:
 *
 *   'R' (or no command)  emit the frame back out of in_port
 *   'M'                  emit a copy to every port in ctx->ports (a multicast group)
 *   'C'                  emit it to ctx->cpu_port (packet-in)
 *   'N'                  emit it to port 400, which no test owns
 *   'F'                  return -1 (a runtime fault of the program)
 *   'T'                  emit only the first 20 bytes back (a malformed frame for the port)
 *   'D'                  emit nothing (drop)
 */
#include <stdint.h>

#include "p4r_handler.h"

struct test_ctx {
    uint32_t cpu_port;
    uint32_t nports;
    uint32_t ports[64];
    uint64_t calls;
};

int test_handler(void *handler_ctx, uint32_t in_port, const uint8_t *frame, uint32_t len,
                 p4r_emit_fn emit, void *emit_ctx) {
    struct test_ctx *ctx = handler_ctx;
    ctx->calls++;
    uint8_t cmd = len > 42 ? frame[42] : 'R';
    switch (cmd) {
    case 'M':
        for (uint32_t i = 0; i < ctx->nports && i < 64; i++) emit(emit_ctx, ctx->ports[i], frame, len);
        return 0;
    case 'C':
        emit(emit_ctx, ctx->cpu_port, frame, len);
        return 0;
    case 'N':
        emit(emit_ctx, 400, frame, len);
        return 0;
    case 'F':
        return -1;
    case 'T':
        emit(emit_ctx, in_port, frame, len < 20 ? len : 20);
        return 0;
    case 'D':
        return 0;
    default:
        emit(emit_ctx, in_port, frame, len);
        return 0;
    }
}
