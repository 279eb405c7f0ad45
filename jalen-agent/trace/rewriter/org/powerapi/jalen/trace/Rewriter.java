/*
 * Rewriter.java - rewrites the methods that jalen's trace= patterns name,
 * with ObjectWeb ASM (Debian's libasm-java), so that each call records its
 * entry and its exit (DESIGN.md section 11.2): Trace.enter(id) first (in a
 * constructor, after its super() or this() call), Trace.exit(id) before
 * every return, and Trace.thrown(id) in a handler around the whole body
 * that throws the exception on.  A native method has no body: the invoke
 * instructions that call it, in every class as it loads, get the same
 * three calls around them.  ASM computes the stack map frames.
 *
 * Loaded by the agent in a class loader of its own (parent: the boot
 * loader), so that the application's own ASM, if any, is not this one.
 * Called from the agent's ClassFileLoadHook through JNI.
 */
package org.powerapi.jalen.trace;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.regex.Pattern;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.commons.AdviceAdapter;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.InsnList;
import org.objectweb.asm.tree.InsnNode;
import org.objectweb.asm.tree.JumpInsnNode;
import org.objectweb.asm.tree.LabelNode;
import org.objectweb.asm.tree.LdcInsnNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.TryCatchBlockNode;

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

    /** Whether a method of f with a body (not abstract, not native, not
     * <clinit>) is one a pattern names; f null (not read): whether a
     * pattern names the class (ASM then says what is wrong). */
    private static boolean bodies(String cls, ClassFile f) {
        if (f == null) {
            for (Pat p : pats)
                if (p.cls.matcher(cls).matches())
                    return true;
            return false;
        }
        for (Map.Entry<String, Integer> m : f.methods.entrySet()) {
            String k = m.getKey();
            int paren = k.indexOf('(');
            if ((m.getValue() & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) == 0 && paren > 0
                    && !k.startsWith("<clinit>")
                    && match(cls, k.substring(0, paren), k.substring(paren)) >= 0)
                return true;
        }
        return false;
    }

    private static ClassFile read(byte[] b) {
        try {
            return ClassFile.parse(b);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** The class file with its matching methods rewritten and its calls of
     * matching native methods wrapped, or null when there is none. */
    public static byte[] rewrite(ClassLoader loader, String cls, byte[] b) {
        ClassFile f = read(b);
        Map<String, String> sites = f == null ? new HashMap<>() : nativeSites(loader, f);
        if (sites.isEmpty() && !bodies(cls, f))
            return null; // read without ASM: a class file newer than it costs no line
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
                if ((acc & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0)
                    return mv;
                int p = name.equals("<clinit>") ? -1 : match(cls, name, desc);
                int id = p < 0 ? -1 : Trace.register(cls.replace('/', '.'), name, desc, p);
                if (id >= 0) {
                    n[0]++;
                    mv = new Advice(mv, acc, name, desc, id);
                }
                return sites.isEmpty() ? mv : new Sites(mv, acc, name, desc, sig, exc, sites, n);
            }
        };
        r.accept(cv, ClassReader.EXPAND_FRAMES);
        return n[0] > 0 ? w.toByteArray() : null;
    }

    /* ---- the call sites of native methods ---- */

    private static final Object BOOT = new Object();
    /** class files read per class loader (BOOT: the boot loader's) */
    private static final Map<Object, Map<String, ClassFile>> seen = new WeakHashMap<>();

    /** The method references of f that a pattern names and that resolve
     * to a native method: "owner.name+desc" -> the class declaring it. */
    private static Map<String, String> nativeSites(ClassLoader loader, ClassFile f) {
        Map<String, String> m = new HashMap<>();
        for (String[] r : f.refs) {
            if (r[1].startsWith("<") || match(r[0], r[1], r[2]) < 0)
                continue;
            String decl = nativeOwner(loader, f, r[0], r[1], r[2]);
            if (decl != null)
                m.put(r[0] + '.' + r[1] + r[2], decl);
        }
        return m;
    }

    /** The class declaring the method that owner.name+desc resolves to
     * (JVMS 5.4.3.3: owner, then its super classes; interfaces declare no
     * native method) when that method is native, else null. */
    private static String nativeOwner(ClassLoader loader, ClassFile self, String owner,
                                      String name, String desc) {
        for (int depth = 0; owner != null && depth < 64; depth++) {
            ClassFile f = owner.equals(self.name) ? self : classFile(loader, owner);
            if (f == null)
                return null;
            Integer acc = f.methods.get(name + desc);
            if (acc != null)
                return (acc & Opcodes.ACC_NATIVE) != 0 ? owner : null;
            owner = f.superName;
        }
        return null;
    }

    /** The class file of cls as loader finds it (as a resource: no class
     * is loaded), null when it cannot be read. */
    private static ClassFile classFile(ClassLoader loader, String cls) {
        Object key = loader == null ? BOOT : loader;
        synchronized (seen) {
            Map<String, ClassFile> m = seen.get(key);
            if (m != null && m.containsKey(cls))
                return m.get(cls);
        }
        ClassFile f = null;
        String res = cls + ".class";
        try (InputStream in = loader != null ? loader.getResourceAsStream(res)
                                             : ClassLoader.getSystemResourceAsStream(res)) {
            if (in != null) {
                ByteArrayOutputStream o = new ByteArrayOutputStream();
                byte[] buf = new byte[8192];
                for (int k; (k = in.read(buf)) > 0;)
                    o.write(buf, 0, k);
                f = ClassFile.parse(o.toByteArray());
            }
        } catch (IOException | RuntimeException e) {
            f = null;
        } catch (LinkageError e) {
            // reading it needed the class being loaded now (a JDK class of the
            // loader's own, hooked): not resolved this time, not kept
            return null;
        }
        synchronized (seen) {
            Map<String, ClassFile> m = seen.get(key);
            if (m == null)
                seen.put(key, m = new HashMap<>());
            m.put(cls, f);
        }
        return f;
    }

    /** A method whose calls of the native methods in sites get enter
     * before, exit after and, in a handler around the call alone, thrown
     * (its handlers first: an exception of the call reaches thrown before
     * the method's own handlers). */
    static final class Sites extends MethodNode {
        private final MethodVisitor next;
        private final Map<String, String> sites;
        private final int[] n;

        Sites(MethodVisitor next, int acc, String name, String desc, String sig, String[] exc,
              Map<String, String> sites, int[] n) {
            super(Opcodes.ASM9, acc, name, desc, sig, exc);
            this.next = next;
            this.sites = sites;
            this.n = n;
        }

        private static MethodInsnNode hook(String name) {
            return new MethodInsnNode(Opcodes.INVOKESTATIC, HOOKS, name, "(I)V", false);
        }

        @Override
        public void visitEnd() {
            List<TryCatchBlockNode> mine = new ArrayList<>();
            for (AbstractInsnNode in : instructions.toArray()) {
                if (!(in instanceof MethodInsnNode) || in.getOpcode() == Opcodes.INVOKEINTERFACE)
                    continue;
                MethodInsnNode m = (MethodInsnNode) in;
                String decl = sites.get(m.owner + '.' + m.name + m.desc);
                int id = decl == null ? -1
                        : Trace.register(decl.replace('/', '.'), m.name, m.desc,
                                         match(m.owner, m.name, m.desc));
                if (id < 0)
                    continue;
                LabelNode s = new LabelNode(), e = new LabelNode(), h = new LabelNode(),
                          after = new LabelNode();
                InsnList pre = new InsnList(), post = new InsnList();
                pre.add(new LdcInsnNode(id));
                pre.add(hook("enter"));
                pre.add(s);
                post.add(e);
                post.add(new LdcInsnNode(id));
                post.add(hook("exit"));
                post.add(new JumpInsnNode(Opcodes.GOTO, after));
                post.add(h);
                post.add(new LdcInsnNode(id));
                post.add(hook("thrown"));
                post.add(new InsnNode(Opcodes.ATHROW));
                post.add(after);
                instructions.insertBefore(m, pre);
                instructions.insert(m, post);
                mine.add(new TryCatchBlockNode(s, e, h, null));
                n[0]++;
            }
            tryCatchBlocks.addAll(0, mine);
            accept(next);
        }
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
