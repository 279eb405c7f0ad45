/*
 * ClassFile.java - the few facts of a class file that the call sites of
 * native methods need (DESIGN.md section 11.2): its method references, its
 * super class and its methods' access flags, read without ASM, which
 * refuses class files newer than it reads (JDK 25's own, class file 69),
 * whose layout these parts share with every older one (JVMS 4.1, 4.4).
 */
package org.powerapi.jalen.trace;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

final class ClassFile {
    String name;
    String superName; // null: java/lang/Object
    /** name + descriptor -> access flags */
    final Map<String, Integer> methods = new HashMap<>();
    /** CONSTANT_Methodref entries: owner, name, descriptor */
    final List<String[]> refs = new ArrayList<>();

    /** Throws IOException on what is not a class file. */
    static ClassFile parse(byte[] b) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(b));
        if (in.readInt() != 0xCAFEBABE)
            throw new IOException("not a class file");
        in.readInt(); // minor, major version
        int n = in.readUnsignedShort();
        String[] utf = new String[n];
        int[] a = new int[n], c = new int[n];
        int[] tag = new int[n];
        for (int i = 1; i < n; i++) {
            tag[i] = in.readUnsignedByte();
            switch (tag[i]) {
            case 1:
                utf[i] = in.readUTF(); // u2 length, modified UTF-8: as DataInput reads it
                break;
            case 7: case 8: case 16: case 19: case 20:
                a[i] = in.readUnsignedShort();
                break;
            case 15:
                in.readUnsignedByte();
                a[i] = in.readUnsignedShort();
                break;
            case 3: case 4:
                in.readInt();
                break;
            case 5: case 6: // two slots
                in.readLong();
                i++;
                break;
            case 9: case 10: case 11: case 12: case 17: case 18:
                a[i] = in.readUnsignedShort();
                c[i] = in.readUnsignedShort();
                break;
            default:
                throw new IOException("constant pool tag " + tag[i] + " at " + i);
            }
        }
        ClassFile f = new ClassFile();
        for (int i = 1; i < n; i++)
            if (tag[i] == 10) // Methodref: class, name and type
                f.refs.add(new String[] {utf[a[a[i]]], utf[a[c[i]]], utf[c[c[i]]]});
        in.readUnsignedShort(); // access
        f.name = utf[a[in.readUnsignedShort()]];
        int s = in.readUnsignedShort();
        f.superName = s == 0 ? null : utf[a[s]];
        in.skipBytes(2 * in.readUnsignedShort()); // interfaces
        members(in, utf, null); // fields
        members(in, utf, f.methods);
        return f;
    }

    private static void members(DataInputStream in, String[] utf, Map<String, Integer> out)
            throws IOException {
        for (int k = in.readUnsignedShort(); k > 0; k--) {
            int acc = in.readUnsignedShort();
            String name = utf[in.readUnsignedShort()], desc = utf[in.readUnsignedShort()];
            for (int t = in.readUnsignedShort(); t > 0; t--) {
                in.readUnsignedShort();
                int len = in.readInt();
                if (in.skipBytes(len) != len)
                    throw new IOException("truncated attribute");
            }
            if (out != null)
                out.put(name + desc, acc);
        }
    }
}
