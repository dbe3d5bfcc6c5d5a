#!/usr/bin/env bash
# Installs what building, testing and running Switchman needs on Debian 12,
# as root or through sudo. Quick when everything is already there.
set -euo pipefail

packages=(
  cmake g++ ninja-build ccache pkg-config clang-format-14
  qt6-base-dev qt6-base-private-dev libqt6opengl6-dev qt6-httpserver-dev qt6-websockets-dev qt6-charts-dev qt6-svg-dev
  libqt6sql6-sqlite
  qtkeychain-qt6-dev libhiredis-dev rapidjson-dev zlib1g-dev libmimalloc-dev redis-server
  xvfb xauth trayer gnome-keyring dbus dbus-x11 libsecret-tools
  nodejs npm curl
  dpkg-dev file desktop-file-utils appstream
)

is_installed() {
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true) == installed ]]
}

missing=()
for package in "${packages[@]}"; do
  if is_installed "$package"; then
    continue
  fi
  # A Node.js that is not Debian's (e.g. NodeSource's nodejs package) ships
  # npm itself and conflicts with Debian's npm package: keep it.
  if [[ $package == npm ]] && is_installed nodejs && command -v npm >/dev/null; then
    continue
  fi
  missing+=("$package")
done

if ((${#missing[@]} == 0)); then
  echo "deps: all ${#packages[@]} packages are installed"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
