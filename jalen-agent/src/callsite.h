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
    uintptr_t lo, hi;       /* bytes that may be read: the method's code, else
                             * the code cache */
    const uint32_t *pcs;    /* the method's debug records (HotSpot's PcDescs,
                             * as CompiledMethodLoad lists them): offsets from
                             * lo, sorted, distinct; NULL when not known */
    const uint8_t *invoke;  /* per record: JL_REC_INVOKE when its innermost
                             * scope is at an invoke bytecode, and the
                             * number of its scopes (inlining depth + 1,
                             * at most 127; 0: not known) times 2 (NULL:
                             * none of it known) */
    const uint32_t *chain;  /* per record: a hash of its scopes' methods,
                             * outermost first (NULL, or 0: not known) */
    const uint32_t *parent; /* the same without the innermost scope: a
                             * record whose parent equals another's chain
                             * is of a method that the other's inlined */
    size_t npcs;
} jl_code;

#define JL_REC_INVOKE 1
#define JL_REC_DEPTH(flags) ((flags) >> 1)

/* How far before a leaf call its scope's record may end: the instructions
 * that set up the call's arguments (bytes). */
#define JL_CALLSITE_SETUP 64

/* How many moves that put registers back (mov r, r; mov r, [rsp+d]) may
 * come between a leaf call and the jump that follows it. */
#define JL_CALLSITE_MOVES 4

/* The length of the call instruction that ends right before p (5 for
 * call rel32, 2 to 8 for call r/m64 with its ModRM, SIB, displacement and
 * REX prefix), 0 when the bytes there are no call; reads the 8 bytes
 * before p. */
int jl_call_len(const unsigned char *p);

/* Whether the 16 bytes at a (8-aligned) lie in a thread's stack [lo, hi):
 * what the walks check before they read two words there.  a is often a
 * word read off the stack, which may be anything (-8 as well: no
 * overflow).  Async-signal-safe. */
int jl_stack_ok(uintptr_t a, uintptr_t lo, uintptr_t hi);

/* What a return address returns from. */
enum {
    JL_CALL_JAVA = 0,      /* Java code (through a vtable or itable stub too) */
    JL_CALL_LEAF = 1,      /* a stub or VM leaf routine (CRC32, javaTimeMillis) */
    JL_CALL_ARRAYCOPY = 2, /* an arraycopy stub */
    JL_CALL_NATIVE = 3,    /* native code outside the code cache (the VM's
                            * javaTimeNanos, libc, the vDSO) */
};

/* The index of code's first record at or after offset off (code->npcs:
 * none).  Async-signal-safe. */
size_t jl_first_record(const jl_code *code, uintptr_t off);

/* ra: a return address in code (ra >= code->lo + 1), after a call
 * instruction of call_len bytes; leaf: JL_CALL_*.  A debug record at offset X
 * describes the instructions that end at X since the record before it, and
 * AsyncGetCallTrace decodes a PC at the first record after it.
 *
 * Returns the PC to give it:
 *   - ra - 1 when a record sits at ra itself: a call into Java code has its
 *     safepoint record at its return address (ra would skip it);
 *   - for a call to an arraycopy stub (C2 records nothing for the
 *     arraycopy it expands late, where the stubs of intrinsics expanded at
 *     parse time carry their call's scope in the records after them),
 *     the last record before the call
 *     when it ends at most JL_CALLSITE_SETUP bytes before it, its
 *     innermost scope is an invoke (System.arraycopy, an intrinsic's
 *     method) and it is not the safepoint record of an earlier call (one
 *     that ends right after a call instruction): the call's own bytecode,
 *     whose argument checks and set-up come right before it; a record at
 *     another bytecode there belongs to code scheduled before the call and
 *     is not taken;
 *   - for a call into native code (JL_CALL_NATIVE, through
 *     movabs r10, imm64; call r10 or a call rel32) with no record at ra
 *     (C2 gives such a leaf call no record of its own, and the code laid
 *     out after it is what uses its result: another method's, or the
 *     caller's) whose record before ends exactly where that call sequence
 *     begins:
 *       - the record before not at an invoke, and the record after of a
 *         method inlined by the one before (nanoTime's result stored by
 *         AtomicLong.lazySet) or of the method that inlined it (the call
 *         ended that method): one byte before the record before;
 *       - the record before at an invoke (the call is the first thing the
 *         invoked method does) and the record after two scopes deeper (in
 *         a method the invoked one inlined, its consumer): ra - 1, and
 *         *drop = 1: the innermost frame of what is decoded there is left
 *         out, leaving the invoked method on top;
 *   - else, for a leaf call followed by an
 *     unconditional jump (an out-of-line block that returns to the main
 *     path; for an arraycopy call, after at most JL_CALLSITE_MOVES moves
 *     that put back the registers the call saved), the jump's target,
 *     followed through at
 *     most 3 jumps inside
 *     [lo, hi): execution goes on there, in the scope of the call or of
 *     one of its callers; the code laid out after the jump is another
 *     block, often another method's; but where a record sits at the
 *     target itself, at an invoke, in the method of the last record
 *     before the call, and no call instruction ends there (C2's short
 *     copies inline, on the path laid out just before the target, the
 *     scope of the stub's call: JDK 17 without tiered compilation, where
 *     the first record after the target was Thread.isAlive's), one byte
 *     before the target; and where the first record from ra
 *     on is of a method inlined by the one the jump leads to (its parent
 *     chain is the other's chain), ra - 1: the call's own method, one
 *     level below where it returns to (a copy that ends its method:
 *     AbstractStringBuilder.shift, inlined into delete);
 *   - else ra - 1: the first record from ra on.
 * *drop (may be NULL) is 0 except where said. */
uintptr_t jl_callsite_pc(uintptr_t ra, int call_len, int leaf, const jl_code *code, int *drop);

/* pc: the interrupted PC of a sample, in code (a compiled method's).  The
 * time a sample stands for belongs to the instruction before pc: the
 * interrupt is taken once the instruction that held the CPU (a load that
 * missed the caches, a division) retires, and pc is the next one, which
 * has not run.  AsyncGetCallTrace decodes pc at the first record after
 * it, which is the scope of the instruction at pc; where a record sits at
 * pc itself, the instruction before belongs to that record's scope, often
 * another inlined method's (DESIGN.md section 11.1).
 *
 * Returns pc - 1 when a record sits at pc (pc - 1 selects it), else pc. */
uintptr_t jl_interrupted_pc(uintptr_t pc, const jl_code *code);

#endif
