#!/bin/sh
# neurond.8 is clean for mandoc's linter and documents exactly the options
# that --help lists.
. "$(dirname "$0")/lib.sh"
need mandoc

page=$top_srcdir/doc/neurond.8
mandoc -T lint -W warning "$page" || fail "mandoc -T lint reports problems in neurond.8"

"$NEUROND" --help | grep -o -- '--[a-z][a-z-]*' | sort -u >"$TEST_TMP/help"
# In the page, options are written "Fl \-name".
sed -n 's/.*Fl \\-\([a-z][a-z\\-]*\).*/--\1/p' "$page" | sed 's/\\-/-/g' | sort -u >"$TEST_TMP/man"
[ -s "$TEST_TMP/help" ] || fail "--help lists no options"
diff -u "$TEST_TMP/help" "$TEST_TMP/man" || fail "options in --help (-) and neurond.8 (+) differ"
grep -q "^\.Sh OPTIONS" "$page" || fail "no OPTIONS section"
echo "neurond.8: $(wc -l <"$TEST_TMP/man") options, lint clean"
