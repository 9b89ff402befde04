#!/bin/sh
# House style: no unbounded string functions anywhere in the C sources.
set -eu
: "${top_srcdir:?run through make check}"
cd "$top_srcdir"
hits=$(grep -nE '\b(strcpy|sprintf|vsprintf|strcat|strtok|strtok_r|atoi|atol|gets)[[:space:]]*\(' \
  $(find lib collectors kube daemon storage web remote tests bench -name '*.[ch]' ! -name '*.pb-c.[ch]' 2>/dev/null) | grep -vE '\b(snprintf|vsnprintf)' || true)
if [ -n "$hits" ]; then
  echo "unbounded string functions found:"
  echo "$hits"
  exit 1
fi
echo "no unbounded string functions"
