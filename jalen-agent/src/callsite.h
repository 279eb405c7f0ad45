/*
 * callsite.h - the PC at which AsyncGetCallTrace should decode a frame
 * that returns to a call instruction of compiled Java code (DESIGN.md
 * section 11.1).
 *
 * Pure: no JVM, no allocation; async-signal-safe.  Kept apart from the
 * agent so that its rules are unit-tested without a JVM
 * (tests/unit_callsite.c).
 */
#ifndef JALEN_CALLSITE_H
#define JALEN_CALLSITE_H

#include <stddef.h>
#include <stdint.h>

/* What is known of the code a return address lies in. */
typedef struct jl_code {
    uintptr_t lo, hi;    /* bytes that may be read: the method's code, else
                          * the code cache */
    const uint32_t *pcs; /* the method's debug records (HotSpot's PcDescs,
                          * as CompiledMethodLoad lists them): offsets from
                          * lo, sorted, distinct; NULL when not known */
    const uint8_t *invoke; /* per record: its innermost scope is at an
                            * invoke bytecode (NULL: not known) */
    size_t npcs;
} jl_code;

/* How far before a leaf call its scope's record may end: the instructions
 * that set up the call's arguments (bytes). */
#define JL_CALLSITE_SETUP 64

/* ra: a return address in code (ra >= code->lo + 1), after a call
 * instruction of call_len bytes; leaf: the call is to a stub, an
 * intrinsic's routine or a VM leaf routine (arraycopy, CRC32,
 * os::javaTimeMillis), not into Java code.  A debug record at offset X
 * describes the instructions that end at X since the record before it, and
 * AsyncGetCallTrace decodes a PC at the first record after it.
 *
 * Returns the PC to give it:
 *   - ra - 1 when a record sits at ra itself: a call into Java code has its
 *     safepoint record at its return address (ra would skip it);
 *   - for a leaf call (which may have no record of its own: C2 records none
 *     for the arraycopy it expands late), the last record before the call
 *     when it ends at most JL_CALLSITE_SETUP bytes before it and its
 *     innermost scope is an invoke (System.arraycopy, an intrinsic's
 *     method): the call's own bytecode, whose argument checks and set-up
 *     come right before it; a record at another bytecode there belongs to
 *     code scheduled before the call and is not taken;
 *   - else, for a leaf call followed by an
 *     unconditional jump (an out-of-line block that returns to the main
 *     path), the jump's target, followed through at most 3 jumps inside
 *     [lo, hi): execution goes on there, in the scope of the call; the
 *     code laid out after the jump is another block, often another
 *     method's;
 *   - else ra - 1: the first record from ra on. */
uintptr_t jl_callsite_pc(uintptr_t ra, int call_len, int leaf, const jl_code *code);

#endif
