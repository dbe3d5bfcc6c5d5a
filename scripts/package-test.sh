#!/usr/bin/env bash
# The install test: builds the Debian package from an already built tree,
# installs it with dpkg, uses the installed /usr/bin/switchman as a new user
# would (--version, a headless demo request, the first start), validates the
# desktop file and AppStream metadata, then purges the package and checks the
# machine is as it was. Never leaves a switchman process or the package behind.
#
#   scripts/package-test.sh [BUILD_DIR]     (default build/dev; needs root or sudo)
#
# Ends with "package-test: N checks passed, M failed"; exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=$(cd "$root" && cd "${1:-build/dev}" && pwd)
app_id=io.github.switchman.Switchman

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }
# check NAME COMMAND...: one counted check; its output is shown only when it fails.
check() {
  local name=$1 output
  shift
  if output=$("$@" 2>&1); then
    ok "$name"
  else
    not_ok "$name"
    [[ -n $output ]] && sed 's/^/    /' <<<"$output"
  fi
  return 0
}
finish() {
  echo "package-test: $passed checks passed, $failed failed"
  ((failed == 0))
}

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  not_ok "root or password-less sudo to install the package"
  finish
fi

package_installed() {
  [[ $(dpkg-query -W -f='${db:Status-Status}' switchman 2>/dev/null || true) == installed ]]
}
# Refuse to touch a machine that already has Switchman installed: the test
# would replace and then remove the user's copy.
if package_installed || [[ -e /usr/bin/switchman ]]; then
  not_ok "no switchman installed before the test (found one: remove it with 'dpkg --purge switchman' to run this test)"
  finish
fi

work=$(mktemp -d)
installed_by_us=0
server_pid=
started_pids=()
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if ((installed_by_us)); then
    "${as_root[@]}" dpkg --purge switchman >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The installed binary, run as a fresh user: its own HOME and config dir, no display.
run_installed() {
  env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share" \
    "$@"
}

# start_server LOG ARGS...: starts the installed switchman in the background
# and sets base_url from its banner (empty when it did not come up in 15 s).
start_server() {
  local log=$1
  shift
  base_url=
  # Not through run_installed: a function in the background is a subshell,
  # and killing it would orphan switchman. env execs, so $! is switchman itself.
  env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share" \
    /usr/bin/switchman "$@" >"$log.out" 2>"$log.err" &
  server_pid=$!
  started_pids+=("$server_pid")
  for _ in $(seq 150); do
    base_url=$(grep -oE 'listening on http://[^ ]+' "$log.out" | head -n 1 | cut -d' ' -f3 || true)
    [[ -n $base_url ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log.out" "$log.err" >&2
  return 1
}
stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

# --- build the package -------------------------------------------------------
mkdir -p "$work/pkg" "$work/home"
echo "package-test: cpack in $build_dir"
if ! (cd "$build_dir" && cpack -G DEB -B "$work/pkg") >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"
  not_ok "cpack builds the Debian package"
  finish
fi
deb=$(ls "$work"/pkg/*.deb)
ok "cpack builds $(basename "$deb")"
version=$(dpkg-deb -f "$deb" Version)

contents=$(dpkg-deb -c "$deb" | awk '{print $NF}')
has_file() { grep -qxF "$1" <<<"$contents"; }
check "package holds the binary" has_file ./usr/bin/switchman
check "package holds the desktop file" has_file "./usr/share/applications/$app_id.desktop"
check "package holds the AppStream metadata" has_file "./usr/share/metainfo/$app_id.metainfo.xml"
check "package holds the scalable icon" has_file "./usr/share/icons/hicolor/scalable/apps/$app_id.svg"
check "package holds the 48, 128 and 256 px icons" bash -c "for s in 48 128 256; do grep -qxF ./usr/share/icons/hicolor/\${s}x\${s}/apps/$app_id.png <<<\"\$1\" || exit 1; done" _ "$contents"
check "package holds the systemd user unit" has_file ./usr/lib/systemd/user/switchman.service
depends=$(dpkg-deb -f "$deb" Depends)
recommends=$(dpkg-deb -f "$deb" Recommends)
check "Depends names Qt 6 and QtKeychain (dpkg-shlibdeps): $depends" \
  bash -c '[[ $1 == *libqt6core6* && $1 == *libqt6network6* && $1 == *libqt6keychain1* ]]' _ "$depends"
# The engine thread runs on Qt's private QEventDispatcherUNIX: the package must only install
# beside the exact Qt it was built with (dpkg-shlibdeps adds this from Qt's symbols file).
check "Depends pins the Qt ABI the private event dispatcher was built against: $depends" \
  bash -c '[[ $1 =~ qt6-base-abi\ \(=\ 6\.[0-9.]+\) ]]' _ "$depends"
check "Depends names the Qt SQLite driver of the usage ledger: $depends" \
  bash -c '[[ $1 == *libqt6sql6-sqlite* ]]' _ "$depends"
# mimalloc is the process allocator (linked, not preloaded): dpkg-shlibdeps adds its library.
check "Depends names mimalloc, the process allocator: $depends" \
  bash -c '[[ $1 == *libmimalloc2.0* ]]' _ "$depends"
check "Recommends a Secret Service: $recommends" \
  bash -c '[[ $1 == *libsecret-1-0* && $1 == *gnome-keyring* ]]' _ "$recommends"

# --- install and use it --------------------------------------------------------
if ! "${as_root[@]}" dpkg -i "$deb" >"$work/dpkg.log" 2>&1; then
  installed_by_us=1 # half-configured: cleanup purges it
  cat "$work/dpkg.log"
  not_ok "dpkg -i installs the package"
  finish
fi
installed_by_us=1
ok "dpkg -i installs the package"

check "installed switchman --version says $version" bash -c '[[ $(/usr/bin/switchman --version) == "switchman $1" ]]' _ "$version"
check "desktop-file-validate passes" desktop-file-validate "/usr/share/applications/$app_id.desktop"
check "appstreamcli validate --no-net passes" appstreamcli validate --no-net "/usr/share/metainfo/$app_id.metainfo.xml"

if start_server "$work/demo" --headless --demo --listen 127.0.0.1:0; then
  ok "installed switchman --headless --demo starts ($base_url)"
  check "a chat completion through the installed gateway answers" bash -c '
    answer=$(curl -sS --max-time 20 "$1/v1/chat/completions" -H "content-type: application/json" \
      -d "{\"model\":\"demo\",\"messages\":[{\"role\":\"user\",\"content\":\"hello from the package test\"}]}")
    echo "$answer"
    [[ $answer == *"You said"* ]]' _ "$base_url"
  check "an Anthropic message with a Claude Code model name answers through the claude-* alias" bash -c '
    answer=$(curl -sS --max-time 20 "$1/v1/messages" -H "content-type: application/json" \
      -d "{\"model\":\"claude-sonnet-4-5-20250929\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}")
    echo "$answer"
    [[ $answer == *"You said"* ]]' _ "$base_url"
  stop_server
else
  not_ok "installed switchman --headless --demo starts"
  stop_server
fi

# First start: no configuration yet, no --demo.
if start_server "$work/first" --headless --listen 127.0.0.1:0; then
  ok "installed switchman starts without a configuration"
  starter="$work/home/.config/switchman/config.json"
  check "the first start writes a starter configuration" test -s "$starter"
  check "the starter configuration passes check-config" run_installed /usr/bin/switchman check-config "$starter"
  check "the first start says where the file is and how to add a key" bash -c '
    grep -qF "$1" "$2" && grep -qF "switchman credential set" "$2" && grep -qF "switchman --demo" "$2"' \
    _ "$starter" "$work/first.err"
  stop_server
else
  not_ok "installed switchman starts without a configuration"
  stop_server
fi

# --- remove it and leave the machine as it was ---------------------------------
if "${as_root[@]}" dpkg --purge switchman >"$work/dpkg-purge.log" 2>&1; then
  installed_by_us=0
  ok "dpkg --purge removes the package"
else
  cat "$work/dpkg-purge.log"
  not_ok "dpkg --purge removes the package"
fi
check "/usr/bin/switchman is gone" test ! -e /usr/bin/switchman
check "the desktop file, metadata, icons and unit are gone" bash -c '! ls /usr/share/applications/$1.desktop \
  /usr/share/metainfo/$1.metainfo.xml /usr/share/icons/hicolor/*/apps/$1.* /usr/lib/systemd/user/switchman.service 2>/dev/null | grep -q .' _ "$app_id"
check "dpkg no longer knows the package" bash -c '! dpkg-query -W switchman >/dev/null 2>&1'
check "no switchman process this test started is left" bash -c 'for pid; do ! kill -0 "$pid" 2>/dev/null || exit 1; done' \
  _ "${started_pids[@]}"
# Whatever started it: no process may still run the purged /usr/bin/switchman.
installed_binary_processes() {
  local exe
  for exe in /proc/[0-9]*/exe; do
    [[ $(readlink "$exe" 2>/dev/null) == "/usr/bin/switchman"* ]] && echo "${exe%/exe}"
  done
  return 0
}
check "no process runs the installed binary any more" bash -c '[[ -z $1 ]] || { echo "$1"; exit 1; }' \
  _ "$(installed_binary_processes)"

finish
