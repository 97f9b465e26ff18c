# shellcheck shell=sh
# Sourced by the guests of hosts joined by RDMA (tests/vm/rdma.py): each
# is one host with the Soft-RoCE device rxe0 on its virtio-net NIC, eth0.
#
#   rdma_up ADDR/PREFIX   eth0 up with that IPv4 address, rxe0 made on it
#                         (rxe-link), then rdma_wait_gid
#   rdma_wait_gid         until rxe0 has the GID of eth0's IPv4 address
#   rdma_wait_carrier 0|1 until eth0's carrier is off (0) or on (1)
#   rdma_wait_port STATE  until rxe0's port 1 is in STATE (ACTIVE, DOWN)
#   rdma_wait_file FILE TEXT  until FILE has a line with TEXT
#
# Each waits RDMA_WAIT_S at most, by the guest's clock (/proc/uptime: under
# TCG a loop's sleeps run long), and fails (status 1, and a line saying
# what it waited for) past that.  rdma_ms prints that clock in ms.
# busybox's sh, which runs this, has local.
# shellcheck disable=SC3043
RDMA_NETDEV=eth0
RDMA_DEV=rxe0
RDMA_WAIT_S=${RDMA_WAIT_S:-60}
RDMA_ADDR=

rdma_ms() {
	local up s f
	read -r up _ </proc/uptime
	s=${up%.*}
	f=${up#*.}
	f=${f#0}
	echo $((s * 1000 + f * 10))
}

# rdma_until WHAT COMMAND...: run COMMAND every 0.1 s until it succeeds,
# RDMA_WAIT_S at most.
rdma_until() {
	local what="$1" t0
	shift
	t0=$(rdma_ms)
	until "$@"; do
		if [ $(($(rdma_ms) - t0)) -gt $((RDMA_WAIT_S * 1000)) ]; then
			echo "rdma: no $what in $RDMA_WAIT_S s"
			return 1
		fi
		sleep 0.1
	done
}

# Whether "$@", a reducer given a wrong key, failed because its mapper
# refused the key (its output in /tmp/rdma-refused.out).
rdma_refused() {
	! "$@" >/tmp/rdma-refused.out 2>&1 &&
		grep -q "refused our key" /tmp/rdma-refused.out
}

# Until the mapper listens: "$@", a reducer given a wrong key, tried again
# until the mapper refuses that key; its last output is printed.
rdma_wait_mapper() {
	local status=0
	rdma_until "refusal of a wrong key" rdma_refused "$@" || status=1
	cat /tmp/rdma-refused.out
	return $status
}

# The RoCE GID of an IPv4 address: the address mapped into IPv6.
rdma_ipv4_gid() {
	local IFS=.
	# The four numbers of a dotted quad, one argument each.
	# shellcheck disable=SC2086
	set -- $1
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' \
		"$1" "$2" "$3" "$4"
}

# The GID table's first entries (link-local first, then one per address
# and RoCE version); an unused entry reads as zeros or not at all.
rdma_has_gid() {
	local i g
	for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
		g=
		read -r g 2>/dev/null \
			<"/sys/class/infiniband/$RDMA_DEV/ports/1/gids/$i" ||
			true
		if [ "$g" = "$1" ]; then
			RDMA_GID_INDEX=$i
			return 0
		fi
	done
	return 1
}

rdma_wait_gid() {
	local gid
	gid=$(rdma_ipv4_gid "${RDMA_ADDR%/*}")
	rdma_until "GID $gid on $RDMA_DEV" rdma_has_gid "$gid"
}

rdma_carrier_is() {
	[ "$(cat "/sys/class/net/$RDMA_NETDEV/carrier" 2>/dev/null)" = "$1" ]
}

rdma_wait_carrier() {
	rdma_until "carrier $1 on $RDMA_NETDEV" rdma_carrier_is "$1"
}

rdma_port_is() {
	case $(cat "/sys/class/infiniband/$RDMA_DEV/ports/1/state") in
	*": $1") return 0 ;;
	esac
	return 1
}

rdma_wait_port() {
	rdma_until "port state $1 on $RDMA_DEV" rdma_port_is "$1"
}

rdma_file_has() {
	grep -q -e "$2" "$1" 2>/dev/null
}

rdma_wait_file() {
	rdma_until "\"$2\" in $1" rdma_file_has "$1" "$2"
}

rdma_up() {
	local t0 t1
	RDMA_ADDR=$1
	t0=$(rdma_ms)
	ip link set lo up
	ip link set "$RDMA_NETDEV" up
	ip addr add "$RDMA_ADDR" dev "$RDMA_NETDEV"
	rxe-link add "$RDMA_DEV" "$RDMA_NETDEV"
	t1=$(rdma_ms)
	rdma_wait_gid
	rdma_wait_port ACTIVE
	echo "rdma: $RDMA_DEV on $RDMA_NETDEV $RDMA_ADDR up at uptime" \
		"$(($(rdma_ms) / 1000)) s: rxe-link after $((t1 - t0)) ms," \
		"GID index $RDMA_GID_INDEX after $(($(rdma_ms) - t1)) ms more"
}
