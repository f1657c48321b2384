#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# check-config.sh CONFIG FRAGMENT...: fail, naming them, when options that the
# fragments ask for are not in CONFIG as asked.  A later fragment overrides an
# earlier one, as merge_config.sh does.
set -euo pipefail
config=$1; shift
declare -A want=()
for frag in "$@"; do
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) want[${line%%=*}]=${line#*=} ;;
		"# CONFIG_"*" is not set") o=${line#\# }; want[${o%% *}]=n ;;
		esac
	done <"$frag"
done
bad=0
for opt in "${!want[@]}"; do
	v=${want[$opt]}
	got=$(grep -E "^$opt=" "$config" | cut -d= -f2- || true)
	if [ "$v" = n ]; then
		[ -z "$got" ] || [ "$got" = n ] && continue
	elif [ "$got" = "$v" ]; then
		continue
	fi
	echo "config check: $opt: asked for '$v', got '${got:-not set}'" >&2
	bad=1
done
if [ $bad -ne 0 ]; then
	echo "config check: FAILED for $config (missing dependency or renamed option?)" >&2
	exit 1
fi
echo "config check: all ${#want[@]} requested options present in $(basename "$(dirname "$config")")/.config" >&2
