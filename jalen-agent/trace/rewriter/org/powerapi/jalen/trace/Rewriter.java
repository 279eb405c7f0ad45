/*
 * Rewriter.java - rewrites the methods that jalen's trace= patterns name,
 * with ObjectWeb ASM (Debian's libasm-java), so that each call records its
 * entry and its exit (DESIGN.md section 11.2): Trace.enter(id) first (in a
 * constructor, after its super() or this() call), Trace.exit(id) before
 * every return, and Trace.thrown(id) in a handler around the whole body
 * that throws the exception on.  ASM computes the stack map frames.
 *
 * Loaded by the agent in a class loader of its own (parent: the boot
 * loader), so that the application's own ASM, if any, is not this one.
 * Called from the agent's ClassFileLoadHook through JNI.
 */
package org.powerapi.jalen.trace;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.commons.AdviceAdapter;

public final class Rewriter {
    private Rewriter() {}

    private static final String HOOKS = "org/powerapi/jalen/trace/Trace";

    /** One trace= pattern: CLASS.METHOD[DESCRIPTOR], '*' any characters. */
    static final class Pat {
        final Pattern cls, method;
        final String desc; // null: any overload

        Pat(String spec) {
            String head = spec, d = null;
            int paren = spec.indexOf('(');
            if (paren >= 0) {
                head = spec.substring(0, paren);
                d = spec.substring(paren);
            }
            int dot = head.lastIndexOf('.');
            if (dot <= 0 || dot == head.length() - 1)
                throw new IllegalArgumentException("trace pattern '" + spec
                        + "' is not CLASS.METHOD (write Demo.work, com.acme.*.handle or Demo.*)");
            cls = glob(head.substring(0, dot).replace('.', '/'));
            method = glob(head.substring(dot + 1));
            desc = d;
        }

        private static Pattern glob(String g) {
            String[] parts = g.split("\\*", -1);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < parts.length; i++) {
                if (i > 0)
                    sb.append(".*");
                if (!parts[i].isEmpty())
                    sb.append(Pattern.quote(parts[i]));
            }
            return Pattern.compile(sb.toString());
        }
    }

    private static volatile Pat[] pats = new Pat[0];

    /** Takes the trace= patterns, ';'-separated; throws
     * IllegalArgumentException naming a bad one. */
    public static void configure(String spec) {
        List<Pat> l = new ArrayList<>();
        // ';' separates patterns, except inside a descriptor: (Ljava/lang/String;)I
        for (String s : spec.split(";(?![^(]*\\))"))
            if (!s.isEmpty())
                l.add(new Pat(s));
        pats = l.toArray(new Pat[0]);
    }

    private static int match(String cls, String name, String desc) {
        Pat[] p = pats;
        for (int i = 0; i < p.length; i++)
            if (p[i].cls.matcher(cls).matches() && p[i].method.matcher(name).matches()
                    && (p[i].desc == null || p[i].desc.equals(desc)))
                return i;
        return -1;
    }

    /** The class file with its matching methods rewritten, or null when
     * none matches. */
    public static byte[] rewrite(ClassLoader loader, String cls, byte[] b) {
        ClassReader r = new ClassReader(b);
        int[] n = {0};
        ClassWriter w = new ClassWriter(r, ClassWriter.COMPUTE_FRAMES) {
            @Override
            protected String getCommonSuperClass(String t1, String t2) {
                try {
                    return common(loader, t1, t2);
                } catch (Throwable e) {
                    return "java/lang/Object";
                }
            }
        };
        ClassVisitor cv = new ClassVisitor(Opcodes.ASM9, w) {
            @Override
            public MethodVisitor visitMethod(int acc, String name, String desc, String sig,
                                             String[] exc) {
                MethodVisitor mv = super.visitMethod(acc, name, desc, sig, exc);
                if ((acc & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0
                        || name.equals("<clinit>"))
                    return mv;
                int p = match(cls, name, desc);
                if (p < 0)
                    return mv;
                int id = Trace.register(cls.replace('/', '.'), name, desc, p);
                if (id < 0)
                    return mv;
                n[0]++;
                return new Advice(mv, acc, name, desc, id);
            }
        };
        r.accept(cv, ClassReader.EXPAND_FRAMES);
        return n[0] > 0 ? w.toByteArray() : null;
    }

    private static String common(ClassLoader loader, String t1, String t2)
            throws ClassNotFoundException {
        Class<?> c = Class.forName(t1.replace('/', '.'), false, loader);
        Class<?> d = Class.forName(t2.replace('/', '.'), false, loader);
        if (c.isAssignableFrom(d))
            return t1;
        if (d.isAssignableFrom(c))
            return t2;
        if (c.isInterface() || d.isInterface())
            return "java/lang/Object";
        do {
            c = c.getSuperclass();
        } while (!c.isAssignableFrom(d));
        return c.getName().replace('.', '/');
    }

    /** Enter first, exit before each return, thrown in a handler around
     * the body. */
    static final class Advice extends AdviceAdapter {
        private final int id;
        private final Label start = new Label(), end = new Label();

        Advice(MethodVisitor mv, int acc, String name, String desc, int id) {
            super(Opcodes.ASM9, mv, acc, name, desc);
            this.id = id;
        }

        @Override
        protected void onMethodEnter() {
            push(id);
            visitMethodInsn(INVOKESTATIC, HOOKS, "enter", "(I)V", false);
            visitLabel(start);
        }

        @Override
        protected void onMethodExit(int opcode) {
            if (opcode == ATHROW)
                return; // the handler's
            push(id);
            visitMethodInsn(INVOKESTATIC, HOOKS, "exit", "(I)V", false);
        }

        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
            visitLabel(end);
            visitTryCatchBlock(start, end, end, null);
            push(id);
            visitMethodInsn(INVOKESTATIC, HOOKS, "thrown", "(I)V", false);
            visitInsn(ATHROW);
            super.visitMaxs(maxStack, maxLocals);
        }
    }
}
