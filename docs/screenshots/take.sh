#!/bin/sh
# take.sh regenerates the Temporal UI screenshots in docs/ (see README.md):
# it builds porch, starts `porch dev` on free ports with a scratch PORCH_HOME,
# runs demo.yml against it and photographs the run with shoot.js.
#
#   docs/screenshots/take.sh
#
# Environment: PORCH (a porch binary; default: built from this tree),
# CHROMIUM (default /usr/bin/chromium), SHOTS_NODE_DIR (where playwright-core is
# installed; default ~/.cache/porch-screenshots, outside the repository).
set -eu

repo=$(cd "$(dirname "$0")/../.." && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
node_dir=${SHOTS_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/porch-screenshots}

if [ ! -x "$chromium" ]; then
	echo "take.sh: no Chromium at $chromium: install it (Debian: apt-get install chromium) or set CHROMIUM" >&2
	exit 1
fi
if [ ! -d "$node_dir/node_modules/playwright-core" ]; then
	mkdir -p "$node_dir"
	(cd "$node_dir" && npm init -y >/dev/null && npm install --no-audit --no-fund playwright-core >/dev/null)
fi

work=$(mktemp -d)
dev_pid=
cleanup() {
	if [ -n "$dev_pid" ]; then
		kill -INT "$dev_pid" 2>/dev/null || true
		wait "$dev_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

porch=${PORCH:-}
if [ -z "$porch" ]; then
	porch=$work/porch
	(cd "$repo" && go build -o "$porch" ./cmd/porch)
fi

free_port() {
	node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}
port=$(free_port)
ui_port=$(free_port)
address=127.0.0.1:$port
export PORCH_HOME="$work/home"

"$porch" dev --port "$port" --ui-port "$ui_port" --compute cpu-cluster --fleet=false >"$work/dev.log" 2>&1 &
dev_pid=$!
tries=0
until grep -q 'press Ctrl-C' "$work/dev.log"; do
	tries=$((tries + 1))
	if [ "$tries" -gt 120 ] || ! kill -0 "$dev_pid" 2>/dev/null; then
		echo "take.sh: porch dev did not start:" >&2
		cat "$work/dev.log" >&2
		exit 1
	fi
	sleep 0.5
done

cd "$repo"
"$porch" compute create --address "$address" -f samples/compute/cpu-cluster.yml >/dev/null
"$porch" run --address "$address" docs/screenshots/demo.yml >"$work/run.log" 2>&1 || {
	cat "$work/run.log" >&2
	exit 1
}
run=$(sed -n 's/^run \(demo-[a-z0-9]*\) succeeded.*/\1/p' "$work/run.log")
if [ -z "$run" ]; then
	echo "take.sh: no run id in porch run's output:" >&2
	cat "$work/run.log" >&2
	exit 1
fi

CHROMIUM=$chromium NODE_PATH="$node_dir/node_modules" node docs/screenshots/shoot.js "http://127.0.0.1:$ui_port" "$run" docs
