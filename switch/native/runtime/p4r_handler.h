/* The one contract between the native switch engine (generated from a P4 program) and the
 * native I/O loop of p4reduce-switch: the loop hands each arriving frame to a handler, the
 * handler runs it through the pipeline and emits every frame that leaves, in order.
 *
 * Both sides are plain C with no Python in them, so the loop runs without the GIL. The handler
 * must be safe to call while control-plane calls (tables, registers, PRE) run on other
 * threads: the engine serialises them internally. */
#ifndef P4R_HANDLER_H
#define P4R_HANDLER_H

#include <stdint.h>

/* Called once per frame that leaves the switch, in the order the frames leave. The frame is
 * only valid during the call: copy it if it must outlive it. */
typedef void (*p4r_emit_fn)(void *emit_ctx, uint32_t out_port, const uint8_t *frame, uint32_t len);

/* Runs one frame that arrived on switch port in_port, and everything it spawns (clones,
 * multicast copies, resubmits, recirculations), to completion. Returns 0 when the frame was
 * processed (whether or not anything left), or a negative value when processing failed (a
 * runtime fault of the program): the frame is then dropped and the caller counts it. */
typedef int (*p4r_handler_fn)(void *handler_ctx, uint32_t in_port, const uint8_t *frame,
                              uint32_t len, p4r_emit_fn emit, void *emit_ctx);

#endif
