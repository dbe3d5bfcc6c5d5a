#!/usr/bin/env bash
# Configures and builds everything with the dev preset (Ninja, build/dev),
# through ccache. Warnings are errors under CI=true; a developer may set
# SWITCHMAN_WERROR=OFF for a local experiment.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

werror=${SWITCHMAN_WERROR:-ON}
if [[ ${CI:-} == true ]]; then
  werror=ON
fi

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# ccache keys on paths relative to the checkout, so a fresh clone (CI's) reuses
# what any other checkout on this machine compiled.
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
cmake --preset dev -DSWITCHMAN_WERROR="$werror" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
cmake --build --preset dev -j "${SWITCHMAN_JOBS:-$(nproc)}"
