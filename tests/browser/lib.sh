# Shell side of the browser tests: sourced by each tests/browser/*.sh after
# tests/integration/lib.sh. need_browser skips (77) only when node,
# chromium or the npm package playwright-core is missing;
# install-deps.sh --test installs the first two and npm, with which make
# check installs the third. Exports CHROMIUM for tests/browser/lib.mjs.
need_browser() {
  CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
  need node
  [ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed"
  [ -f "$NODE_MODULES/playwright-core/package.json" ] ||
    skip "playwright-core is not in $NODE_MODULES (configure found no npm, or NODE_MODULES lacks it)"
  export CHROMIUM
}
