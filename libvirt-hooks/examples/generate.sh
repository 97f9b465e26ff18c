#!/bin/sh
# Write the example domains checked in beside this script:
#	generate.sh GENERATOR OUT-DIR
# (make libvirt-examples; test-libvirt-virt-xml runs it too and compares).
set -eu

gen=$1
out=$2

# A mapper and 3 reducers booting a kernel and an initramfs.
"$gen" --out-dir "$out" --name job1 --size 64M --reducers 3 \
	--kernel /var/lib/sivshm-kvm/vmlinuz \
	--initrd /var/lib/sivshm-kvm/initrd.img \
	--append "console=ttyS0 panic=-1"

# A persistent service of 2 reducers booting disk images, one per domain,
# under TCG; its slot files live beside the socket.
"$gen" --out-dir "$out" --name store --size 1G --reducers 2 \
	--disk /var/lib/libvirt/images/@VM@.qcow2 --memory 512 --vcpus 2 \
	--unlink off --type qemu
