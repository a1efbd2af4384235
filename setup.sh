#!/usr/bin/env bash
# Defero set-up: installs every Debian package the project needs (idempotent),
# then builds and runs what was asked.
#
#   bash setup.sh demo    install what is missing, build, run the demo
#   bash setup.sh test    install what is missing, build (warnings are errors),
#                         run every test (ctest) and print its summary; then
#                         the same for a real-time build (build-rt/,
#                         -DDEFERO_BACKEND=hw-obs: programs on the Verilated
#                         OBS) and its tests
#   bash setup.sh deps    only install what is missing
#
# Must run as root on Debian 12 (bookworm). Only Debian packages are used.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="${DEFERO_BUILD_DIR:-$ROOT/build}"
RT_BUILD="${DEFERO_RT_BUILD_DIR:-$ROOT/build-rt}"
JOBS="${DEFERO_JOBS:-2}"

# Every package the project (and its later parts) needs, with why.
PACKAGES=(
  build-essential        # g++ 12, make, libstdc++ 12 headers (stl-patch input)
  cmake ninja-build      # build system
  python3                # lit, test drivers
  clang-19 llvm-19-dev libclang-19-dev llvm-19-tools  # plugin, FileCheck, lit
  verilator              # hw/ RTL models
  yosys                  # hw/ area estimate
  libgtest-dev libgmock-dev  # unit tests
  libbenchmark-dev       # bench/
  libboost-dev           # Boost.Intrusive (header-only) for the K-Bit class tree
  valgrind               # cachegrind/callgrind locality counts
  libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev  # peers in bench/
  python3-matplotlib     # bench report plots
  ccache autoconf clang-tidy-19  # test/build-systems: the wrappers under ccache, configure, clang-tidy
)

die() { echo "setup.sh: $*" >&2; exit 1; }

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    echo "setup.sh: all ${#PACKAGES[@]} packages present"
    return
  fi
  [[ $(id -u) == 0 ]] || die "missing packages (${missing[*]}); run as root to install them"
  echo "setup.sh: installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
}

configure_and_build() {
  local werror="${1:-OFF}"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDEFERO_WERROR="$werror"
  cmake --build "$BUILD" -j "$JOBS"
}

case "${1:-}" in
  deps) install_deps ;;
  demo)
    install_deps
    configure_and_build OFF
    "$BUILD/bin/defero-demo"
    ;;
  test)
    install_deps
    configure_and_build ON
    # ctest prints "N% tests passed, M tests failed out of T" as its summary.
    ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS"
    echo "setup.sh: real-time build ($RT_BUILD, DEFERO_BACKEND=hw-obs)"
    cmake -S "$ROOT" -B "$RT_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DDEFERO_WERROR=ON -DDEFERO_BACKEND=hw-obs -DDEFERO_BUILD_BENCH=OFF
    cmake --build "$RT_BUILD" -j "$JOBS"
    ctest --test-dir "$RT_BUILD" --output-on-failure -j "$JOBS"
    ;;
  *) die "usage: bash setup.sh demo|test|deps (got '${1:-}')" ;;
esac
