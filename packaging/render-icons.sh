#!/usr/bin/env bash
# Renders resources/icons/switchman.svg into the committed hicolor PNGs
# (packaging/icons/SIZE/io.github.switchman.Switchman.png). Run after editing
# the SVG; needs rsvg-convert (Debian: librsvg2-bin). The build does not run
# it, so building never needs librsvg.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for size in 48 128 256; do
  mkdir -p "$root/packaging/icons/$size"
  rsvg-convert -w "$size" -h "$size" "$root/resources/icons/switchman.svg" \
    -o "$root/packaging/icons/$size/io.github.switchman.Switchman.png"
done
