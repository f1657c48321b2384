#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# accel.sh KERNEL INITRD: print the QEMU accelerator to use, "kvm" or "tcg".
# KVM is used only when a probe guest really boots under it and runs its
# userspace (some hosts have a /dev/kvm that cannot run a stock guest, e.g.
# a PVM module).  SP_ACCEL=kvm|tcg overrides.  The answer is cached per boot
# of the host in build/.accel.
. "$(dirname "$0")/lib.sh"
if [ -n "${SP_ACCEL:-}" ]; then echo "$SP_ACCEL"; exit 0; fi
cache=$BUILD/.accel
bootid=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo none)
if [ -f "$cache" ] && [ "$(head -n 1 "$cache")" = "$bootid" ]; then
	tail -n 1 "$cache"; exit 0
fi
acc=tcg
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	log=$(mktemp)
	# A separate shell, so that its report of a crashing QEMU (a PVM
	# /dev/kvm makes it abort) goes to /dev/null with the rest.
	bash -c 'timeout -k 5 60 qemu-system-x86_64 -accel kvm -cpu host \
		-m 512M -smp 1 -nographic -no-reboot -display none -monitor none \
		-kernel "$1" -initrd "$2" \
		-append "console=ttyS0 panic=-1 sp.job=probe quiet" \
		-serial "file:$3" -serial "file:$3.out"; exit 0' \
		probe "$1" "$2" "$log" </dev/null >/dev/null 2>&1 || true
	grep -q SUPERPAGE-PROBE-OK "$log.out" 2>/dev/null && acc=kvm
	rm -f "$log" "$log.out"
fi
printf '%s\n%s\n' "$bootid" "$acc" >"$cache"
echo "$acc"
