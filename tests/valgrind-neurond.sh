#!/bin/sh
# Runs the built daemon under valgrind's memcheck, for CI: integration
# tests start "$NEUROND", which make check points here when
# NEUROND_WRAPPER is set. exec keeps the pid the tests signal. The exit
# status is 99 when memcheck reports an error or a definite or indirect
# leak, so a test's clean-exit check fails.
dir=${VALGRIND_LOG_DIR:-/tmp}
exec valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --log-file="$dir/valgrind-neurond-%p.log" "$(dirname "$0")/../daemon/neurond" "$@"
