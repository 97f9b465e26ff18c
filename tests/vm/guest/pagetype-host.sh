# shellcheck shell=sh
# Sourced first by the script of a kvm_pagetype level-1 host
# (tests/vm/pagetype.py): debugfs mounted, the module loaded and its device
# there.  reload_kvm_amd reloads kvm_amd with other parameters:
#   reload_kvm_amd npt=1
reload_kvm_amd() {
	rmmod kvm_amd
	insmod "$(find "/lib/modules/$(uname -r)" -name 'kvm-amd.ko*')" "$@"
}
mount -t debugfs none /sys/kernel/debug
insmod /lib/modules/extra/kvm_pagetype.ko
test -c /dev/kvm-pagetype
