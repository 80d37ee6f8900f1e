#!/bin/sh
# tests/kmod/build.sh OUTDIR [KVER]: builds sonde_kmod.ko with kbuild against
# Debian's headers of the guest's kernel (not the host's running one) into
# OUTDIR, once per source and kernel (OUTDIR/sonde_kmod.ko.key).
set -e
here=$(cd "$(dirname "$0")" && pwd)
out=$1; kver=${2:-6.1.0-57-amd64}
kdir=/usr/src/linux-headers-$kver
[ -d "$kdir" ] || { echo "build.sh: no $kdir (linux-headers-amd64)" >&2; exit 2; }
key=$(cat "$here/sonde_kmod.c" "$here/Kbuild" | cksum | cut -d' ' -f1)-$kver
mkdir -p "$out"
[ -s "$out/sonde_kmod.ko" ] && [ "$(cat "$out/sonde_kmod.ko.key" 2>/dev/null)" = "$key" ] && exit 0
rm -f "$out/sonde_kmod.ko"
cp "$here/sonde_kmod.c" "$here/Kbuild" "$out/"
env -u MAKEFLAGS -u MFLAGS make -s -C "$kdir" M="$out" modules
echo "$key" >"$out/sonde_kmod.ko.key"
