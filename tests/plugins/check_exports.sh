#!/bin/sh
# Every plugin exports exactly one symbol: jitwarm_plugin_negotiate.
# Usage: check_exports.sh PLUGIN.so...
status=0
for plugin in "$@"; do
  exported=$(nm -D --defined-only "$plugin" | awk '{print $NF}' | sort)
  if [ "$exported" != "jitwarm_plugin_negotiate" ]; then
    echo "FAIL $plugin exports:"; echo "$exported" | sed 's/^/  /'
    status=1
  else
    echo "ok   $plugin exports only jitwarm_plugin_negotiate"
  fi
done
exit $status
