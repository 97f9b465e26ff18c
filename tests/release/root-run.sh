#!/bin/sh
# A command run chrooted in an overlay of a Debian release's root (the one
# root-check.sh uses, made if missing), so that the programs it starts are
# that release's: a VM test of this tree against Debian 13's libvirtd.
# Usage (as root): root-run.sh SUITE BINDS CMD...
#	SUITE	trixie (Debian 13) or bookworm (12)
#	BINDS	directories, one a line, mounted at the same path inside:
#		the build tree and what CMD needs beside it (root.sh, root_run)
# The exit status is CMD's; the overlay, every mount and every process
# left in the root end with this script.
set -eu

[ $# -ge 3 ] || { echo "usage: root-run.sh SUITE BINDS CMD..." >&2; exit 1; }
suite=$1 binds=$2
shift 2
# shellcheck source=tests/release/root.sh
. "$(dirname "$0")/root.sh"

root_setup "$suite"
rc=0
root_run "$binds" "$@" || rc=$?
exit $rc
