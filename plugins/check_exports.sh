#!/bin/sh
# Every plugin exports exactly one symbol: jitwarm_plugin_negotiate
# (docs/plugin-abi.md P1). Installed as <libexecdir>/jitwarm/check-plugin-exports
# for plugin authors (docs/plugin-sdk.md).
# Usage: check_exports.sh PLUGIN.so...
if [ $# -eq 0 ]; then
  echo "usage: $(basename "$0") PLUGIN.so..." >&2
  exit 2
fi
command -v nm >/dev/null 2>&1 || { echo "nm not found (binutils)" >&2; exit 2; }
status=0
for plugin in "$@"; do
  if ! exported=$(nm -D --defined-only "$plugin" 2>&1); then
    echo "FAIL $plugin: ${exported:-nm cannot read it}"
    status=1
    continue
  fi
  exported=$(echo "$exported" | awk 'NF {print $NF}' | sort)
  if [ "$exported" != "jitwarm_plugin_negotiate" ]; then
    count=$(echo "$exported" | grep -c .)
    echo "FAIL $plugin exports $count symbols, not only jitwarm_plugin_negotiate:"
    echo "$exported" | head -n 10 | sed 's/^/  /'
    [ "$count" -gt 10 ] && echo "  ... and $((count - 10)) more"
    status=1
  else
    echo "ok   $plugin exports only jitwarm_plugin_negotiate"
  fi
done
exit $status
