#!/usr/bin/env bash
# vm_guest.sh - the guest of test_live_host's real VM (issue 41; DESIGN.md
# section 18.3): Debian's own kernel and a busybox initramfs holding powerapi,
# the libraries it loads and the 9p modules, in OUT/vmlinuz and OUT/initrd.
#
# Usage: vm_guest.sh OUT KERNEL_DEB POWERAPI HWDB
#
# The kernel comes from the linux-image-*-amd64 package scripts/deps.sh
# downloads (not installed) into /var/cache/powerapi-tests; it is extracted
# with dpkg-deb, and its 9p modules are loaded by /init in the order the
# workplace checked (the package has no modules.dep).  /init mounts the share
# tagged "hostshare" at /run/powerapi-host, the first mount point the host
# sensor probes, starts two busy shells whose CPU weights are 3:1 (reniced to 1
# and 6: 820 and 272 in the kernel's table, 3.01:1), runs
#   powerapi monitor --pid A,B --interval 1s --count $PA_GUEST_WINDOWS --format json
# with no sensor named (auto picks host-share), prints each line prefixed
# "PA-GUEST " on the serial console, and powers off.
set -euo pipefail
out=$1 deb=$2 bin=$3 hwdb=$4
root=$out/root
rm -rf "$root" && mkdir -p "$root"/{bin,mods,proc,sys,dev,run/powerapi-host,tmp}
dpkg-deb --fsys-tarfile "$deb" |
    tar -x -C "$out" --wildcards './boot/vmlinuz-*' '*/kernel/fs/9p/9p.ko' \
        '*/kernel/net/9p/9pnet.ko' '*/kernel/net/9p/9pnet_virtio.ko' \
        '*/kernel/drivers/virtio/virtio.ko' '*/kernel/drivers/virtio/virtio_ring.ko' \
        '*/kernel/drivers/virtio/virtio_pci*.ko' '*/kernel/fs/netfs/netfs.ko' \
        '*/kernel/fs/fscache/fscache.ko'
mv "$out"/boot/vmlinuz-* "$out/vmlinuz"
find "$out/lib/modules" -name '*.ko' -exec cp {} "$root/mods/" \;
cp /bin/busybox "$root/bin/busybox"
cp "$bin" "$root/powerapi"
cp "$hwdb" "$root/hwdb.txt"
# the loader and every library powerapi loads, at the same paths
for lib in $(ldd "$bin" | awk '/=> \//{print $3} /^\t\//{print $1}'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci \
         netfs fscache 9pnet 9pnet_virtio 9p; do
    insmod /mods/$m.ko || echo "PA-GUEST-ERROR insmod $m"
done
mount -t 9p -o trans=virtio,version=9p2000.L hostshare /run/powerapi-host ||
    echo "PA-GUEST-ERROR mount 9p"
sh -c 'while :; do :; done' &
A=$!
sh -c 'while :; do :; done' &
B=$!
renice -n 1 -p $A >/dev/null
renice -n 6 -p $B >/dev/null
echo "PA-GUEST-PIDS $A $B"
/powerapi monitor --hwdb /hwdb.txt --pid $A,$B --interval 1s \
    --count "$(cat /windows)" --format json 2>&1 | sed 's/^/PA-GUEST /'
echo "PA-GUEST-END"
poweroff -f
EOF
chmod +x "$root/init"
echo "${PA_GUEST_WINDOWS:-7}" >"$root/windows"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) >"$out/initrd"
rm -rf "$root" "$out/lib" "$out/boot"
