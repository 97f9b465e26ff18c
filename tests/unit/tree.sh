#!/bin/bash
# What git tracks is source: no build product (an ELF file built in the
# source tree shadows the build tree's through VPATH) and no symbolic link
# that leaves the tree (it names one machine's path).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
if ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	echo "SKIP: $top is not a git checkout"
	exit 77
fi
status=0
git -C "$top" ls-files -s -z | {
	while IFS= read -r -d '' entry; do
		mode=${entry%% *}
		path=${entry#*	}
		if [ "$mode" = 120000 ]; then
			target=$(readlink -m "$top/$path")
			case "$target" in
			"$top"/*) ;;
			*) echo "tracked symlink leaves the tree: $path -> $(readlink "$top/$path")"
			   status=1 ;;
			esac
		elif [ -f "$top/$path" ] &&
		     [ "$(head -c 4 "$top/$path" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
			echo "tracked build product (ELF): $path"
			status=1
		fi
	done
	[ $status = 0 ] && echo "tracked files: sources only"
	exit $status
}
