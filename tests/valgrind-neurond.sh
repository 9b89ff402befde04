#!/bin/sh
# Runs the built daemon under valgrind's memcheck, for CI: integration
# tests start "$NEUROND", which make check points here when
# NEUROND_WRAPPER is set. exec keeps the pid the tests signal. The exit
# status is 99 when memcheck reports an error or a definite or indirect
# leak, so a test's clean-exit check fails. gRPC's possibly lost blocks
# are suppressed, for the reason valgrind-grpc.supp gives.
dir=${VALGRIND_LOG_DIR:-/tmp}
here=$(dirname "$0")
exec valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --suppressions="$here/valgrind-grpc.supp" --log-file="$dir/valgrind-neurond-%p.log" "$here/../daemon/neurond" "$@"
