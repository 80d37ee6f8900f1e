# tests/guest.sh — sourced: runs a script inside Debian's own kernel under
# QEMU (TCG), with the host's file system mounted read-only as the guest's
# root, so the host's sonde, python3 and test programs run there unchanged
# (issue 42: kernel probes need a kernel with kprobes; the host has none).
#
#   guest_ready                 0 when qemu, the kernel, its modules and busybox
#                               are here (else prints why on stdout)
#   guest_run DIR SCRIPT [SECS] runs SCRIPT (a file, run by /bin/sh in a chroot
#                               of the host's /) inside a fresh guest; DIR (a
#                               scratch directory) is shared writable at its
#                               own path; SCRIPT's stdout+stderr come back in
#                               DIR/guest.out, its status in DIR/guest.rc and
#                               as guest_run's status (124: no status came
#                               back within SECS, default 300; the console:
#                               DIR/guest.console)
#
# The initramfs (busybox-static, the 9p/virtio modules, an /init) is built
# once into $SONDE_TEST_CACHE (or $BUILD/test-cache) per kernel and /init.
GUEST_KVER=${GUEST_KVER:-6.1.0-57-amd64}
GUEST_KERNEL=${GUEST_KERNEL:-/boot/vmlinuz-$GUEST_KVER}
GUEST_MODDIR=/lib/modules/$GUEST_KVER
# in load order: each after what it depends on (modinfo -F depends)
GUEST_MODS="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p"

guest_ready() {
	command -v qemu-system-x86_64 >/dev/null 2>&1 || { echo "no qemu-system-x86_64"; return 1; }
	[ -r "$GUEST_KERNEL" ] || { echo "no readable $GUEST_KERNEL"; return 1; }
	[ -d "$GUEST_MODDIR" ] || { echo "no $GUEST_MODDIR"; return 1; }
	[ -x /bin/busybox ] || { echo "no /bin/busybox (busybox-static)"; return 1; }
	command -v cpio >/dev/null 2>&1 || { echo "no cpio"; return 1; }
	local m
	for m in $GUEST_MODS; do
		[ -n "$(guest_modfile "$m")" ] || { echo "no module $m for $GUEST_KVER"; return 1; }
	done
}

guest_modfile() { find "$GUEST_MODDIR/kernel" -name "$1.ko" -print -quit 2>/dev/null; }

# The guest's /init: modules, the host's / at /host (read-only), tmpfs /tmp
# with the host's /tmp directories of sonde_keep in it (a checkout, a build
# or a cache under /tmp stays visible),
# the scratch share at its own path, proc/sys/dev/tracefs/debugfs, then the
# script in a chroot; its status into the scratch dir, then power off.
guest_init() {
	cat <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /mods); do insmod /mod/$m.ko || echo "guest: insmod $m failed"; done
eval "$(tr ' ' '\n' </proc/cmdline | grep '^sonde_')"
mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 host /host || echo "guest: no host share"
mkdir -p /htmp; mount -o bind /host/tmp /htmp
mount -t tmpfs tmp /host/tmp
for k in $(echo "$sonde_keep" | tr , ' '); do mkdir -p "/host/tmp/$k"; mount -o bind "/htmp/$k" "/host/tmp/$k"; done
mkdir -p "/host$sonde_dir"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out "/host$sonde_dir" || echo "guest: no scratch share"
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
mount -t tracefs tracefs /host/sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /host/sys/kernel/debug 2>/dev/null
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
echo "SONDE_GUEST_UP"
chroot /host /bin/sh -c 'cd "$1" && exec /bin/sh "$2"' sh "$sonde_dir" "$sonde_script" >"/host$sonde_dir/guest.out" 2>&1
echo $? >"/host$sonde_dir/guest.rc.tmp"
mv "/host$sonde_dir/guest.rc.tmp" "/host$sonde_dir/guest.rc"
sync
echo "SONDE_GUEST_DONE"
poweroff -f
EOF
}

# guest_initramfs: prints the cached initramfs's path, building it first.
guest_initramfs() {
	local c=${SONDE_TEST_CACHE:-${BUILD:-/tmp}/test-cache} key out m
	key=$( { guest_init; echo "$GUEST_KVER $GUEST_MODS"; } | cksum | cut -d' ' -f1)
	mkdir -p "$c/guest" || return 1
	out=$c/guest/initramfs-$GUEST_KVER-$key.cpio
	(
		flock 9
		[ -s "$out" ] && exit 0
		local t; t=$(mktemp -d) || exit 1
		mkdir -p "$t/bin" "$t/mod" "$t/proc" "$t/sys" "$t/dev"
		cp /bin/busybox "$t/bin/busybox"
		for m in $GUEST_MODS; do cp "$(guest_modfile "$m")" "$t/mod/$m.ko" || exit 1; done
		echo "$GUEST_MODS" >"$t/mods"
		guest_init >"$t/init"; chmod +x "$t/init"
		(cd "$t" && find . | cpio -o -H newc --quiet) >"$out.tmp" && mv "$out.tmp" "$out"
		rm -rf "$t"
	) 9>"$c/guest/lock"
	[ -s "$out" ] && echo "$out"
}

guest_run() {
	local dir script=$2 secs=${3:-300} rd rc
	dir=$(cd "$1" && pwd) || return 1
	case $script in /*) ;; *) script=$PWD/$script ;; esac
	rd=$(guest_initramfs) || { echo "guest: no initramfs" >"$dir/guest.console"; return 1; }
	rm -f "$dir/guest.rc" "$dir/guest.out"
	# the top directories under /tmp of the checkout, the build, the cache
	# and the script: the guest's tmpfs /tmp would hide them
	local keep= p k
	for p in "${ROOT:-}" "${BUILD:-}" "${SONDE_TEST_CACHE:-}" "$(dirname "$script")"; do
		case $p in /tmp/?*) k=${p#/tmp/}; k=${k%%/*} ;; *) continue ;; esac
		case $k in *[!A-Za-z0-9._-]*) continue ;; esac
		case ",$keep," in *",$k,"*) ;; *) keep=${keep:+$keep,}$k ;; esac
	done
	# qemu ends when the guest powers off (-no-reboot: also on a panic);
	# timeout bounds a guest that hangs.
	timeout -k 10 "$secs" qemu-system-x86_64 -accel tcg -cpu max -m 1G -smp 1 \
		-nographic -no-reboot -monitor none -serial stdio \
		-kernel "$GUEST_KERNEL" -initrd "$rd" \
		-append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3 sonde_dir=$dir sonde_script=$script sonde_keep=$keep" \
		-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
		-virtfs local,path="$dir",mount_tag=out,security_model=none \
		</dev/null >"$dir/guest.console" 2>&1
	[ -s "$dir/guest.rc" ] || return 124
	rc=$(cat "$dir/guest.rc")
	return "$rc"
}
