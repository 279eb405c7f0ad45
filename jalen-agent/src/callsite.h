/*
 * callsite.h - which debug-information record of a compiled Java method
 * describes one of its call instructions (DESIGN.md section 11.1).
 *
 * Pure: no JVM, no allocation; async-signal-safe.  Kept apart from the
 * agent so that its rules are unit-tested without a JVM
 * (tests/test_jalen_callsite.c).
 */
#ifndef JALEN_CALLSITE_H
#define JALEN_CALLSITE_H

#include <stddef.h>
#include <stdint.h>

/* pcs: the offsets of a compiled method's debug-information records
 * (HotSpot's PcDescs, as CompiledMethodLoad lists them), sorted and
 * distinct.  A record at offset X describes the instructions that end at
 * X since the record before it.  ret_off: the offset of a return address
 * that follows a call instruction of call_len bytes.
 *
 * Returns the offset of the record that describes that call:
 *   - a record at ret_off itself (a call into Java code, whose safepoint
 *     record sits at its return address; or a call the JIT recorded as an
 *     instruction of its own);
 *   - else the last record at or before the call's first byte: the
 *     instructions that set up the call's arguments, which belong to the
 *     call's bytecode (a call to a stub, an intrinsic or a VM leaf routine
 *     records nothing of its own, and the next record after it is the
 *     code after the call: another bytecode, often another method);
 *   - -1 when there is neither (a call before the first record), or on a
 *     bad argument.
 * HotSpot's AsyncGetCallTrace takes the first record after the PC it is
 * given, so a caller steers it to record R with PC = start + R - 1. */
long jl_callsite_desc(const uint32_t *pcs, size_t n, uint32_t ret_off, uint32_t call_len);

#endif
