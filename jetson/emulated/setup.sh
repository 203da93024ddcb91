#!/usr/bin/env bash
# Builds the emulated Jetson AGX Orin (jetson/README.md, "Emulated AGX Orin"): an arm64 Debian
# root run under QEMU user-mode emulation, with edgebench in a venv from PyPI's aarch64 wheels
# and a recreated JetPack 6 AGX Orin system. Idempotent: a second run checks and redoes only
# what changed. Needs root (mmdebstrap, chroot, binfmt_misc) and a Debian/Ubuntu host.
#
#   1. tools: QEMU >= 10 (qemu-user-static; on Debian 12 from bookworm-backports) and
#      mmdebstrap (apt-get, where missing)
#   2. binfmt_misc: arm64 ELF files run by qemu-aarch64 (with the F flag: works in a chroot)
#   3. the root: Debian bookworm arm64, minimal (essential packages + python3), built once
#      into a tarball in the cache and unpacked into .emulated/root (git-ignored)
#   4. a venv in it (/opt/edgebench-venv) with requirements-aarch64.txt, installed by the
#      host's pip from aarch64 wheels (pip under QEMU is slow and cannot check PyPI's
#      certificates there); wheels are kept in the cache
#   5. edgebench itself, editable: the repository is mounted at the same path by run.sh
#   6. MLPerf's LoadGen (mlcommons-loadgen, pinned in pyproject.toml; PyPI has no aarch64
#      wheel) compiled from its sdist for the root's Python and GCC: with Debian's
#      aarch64-linux-gnu-g++ on the host where it is the root's GCC major version (about a
#      minute), else with the root's own g++ under QEMU (12 min); the wheel is kept in the cache
#   7. jetson-stats (jtop) system-wide for its service and in the venv for the client, the
#      jtop group (jetson/emulated/jtop.sh starts and stops the service)
#   8. the recreated Tegra files (tegra.py install)
#
#   EDGEBENCH_EMULATED_APT=0   do not apt-get install missing tools (fail instead)
#   EDGEBENCH_EMULATED_LOADGEN_BUILD=qemu  build LoadGen inside the root even where the host
#                              can cross-compile it (default: cross where it can)
# Exit status: 0 ready, 3 QEMU user-mode emulation cannot be had here (the message says why),
# 1 anything else.
#   EDGEBENCH_EMULATED_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   (and common.sh's EDGEBENCH_EMULATED_DIR / _CACHE / _QEMU_CPU)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
T0=$SECONDS
SUITE=bookworm
MIRROR=${EDGEBENCH_EMULATED_MIRROR:-http://deb.debian.org/debian}
# mount: util-linux's swapon, which jetson-stats' service runs every update (a board has it)
PACKAGES=python3,libstdc++6,libgomp1,g++,python3-dev,mount
REQ=$EMU_REPO/jetson/emulated/requirements-aarch64.txt
SITE=$EMU_ROOT$EMU_VENV/lib/python$EMU_PY/site-packages
PLATFORM=(--platform manylinux_2_28_aarch64 --platform manylinux_2_27_aarch64
          --platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64
          --python-version "$EMU_PY" --implementation cp --abi "cp${EMU_PY/./}" --abi abi3
          --abi none --only-binary=:all:)

[ "$(uname -s)" = Linux ] || emu_unavailable "needs Linux (QEMU user-mode emulation and binfmt_misc)"
emu_need_root

# 1. tools. QEMU must be >= 10 (common.sh: EMU_QEMU_MIN): Debian 12's own 7.2 crashed in
# the lane, so on Debian 12 it comes from bookworm-backports (an apt source added for it).
apt_install() {   # apt_install [-t SUITE] PKG...
  command -v apt-get >/dev/null 2>&1 && [ "${EDGEBENCH_EMULATED_APT:-1}" != 0 ] \
    || emu_unavailable "missing or too old: ${*: -1} (and friends); install them: qemu-user-static >=" \
               "$EMU_QEMU_MIN, mmdebstrap (Debian/Ubuntu package names)"
  emu_say "installing $* (apt-get)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null) \
    || emu_die "apt-get install $* failed"
}
command -v mmdebstrap >/dev/null 2>&1 || apt_install mmdebstrap
case "$(uname -m)" in aarch64|arm64) ;; *)
  qemu=/usr/libexec/qemu-binfmt/aarch64-binfmt-P
  major=$(emu_qemu_major "$qemu")
  if [ "${major:-0}" -lt "$EMU_QEMU_MIN" ]; then
    # shellcheck disable=SC1091
    . /etc/os-release 2>/dev/null || true
    if [ "${VERSION_CODENAME:-}" = bookworm ]; then
      src=/etc/apt/sources.list.d/edgebench-bookworm-backports.sources
      if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
        emu_say "adding Debian's bookworm-backports to apt ($src) for QEMU 10"
        printf '%s\n' "# Added by edgebench's jetson/emulated/setup.sh: QEMU 10 (qemu-user-static)" \
          "Types: deb" "URIs: ${MIRROR%/}" "Suites: bookworm-backports" "Components: main" \
          "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" > "$src"
      fi
      apt_install -t bookworm-backports qemu-user-static
    else
      apt_install qemu-user-static
    fi
    # A binfmt entry registered with F keeps the QEMU it opened then: register the new one.
    [ ! -e "$EMU_BINFMT/qemu-aarch64" ] || echo -1 > "$EMU_BINFMT/qemu-aarch64"
    major=$(emu_qemu_major "$qemu")
    [ "${major:-0}" -ge "$EMU_QEMU_MIN" ] || emu_die "QEMU ${major:-?} after installing" \
      "qemu-user-static; the lane needs QEMU >= $EMU_QEMU_MIN"
  fi ;;
esac

# 2. binfmt_misc
emu_check_binfmt 1
emu_say "binfmt_misc: arm64 binaries run by $(sed -n 's/^interpreter //p' "$EMU_BINFMT/qemu-aarch64" 2>/dev/null || echo 'this CPU')"

mkdir -p "$EMU_STAMPS" "$EMU_CACHE/wheels"
stamp_ok() { [ -f "$EMU_STAMPS/$1" ] && [ "$(cat "$EMU_STAMPS/$1")" = "$2" ]; }

# 3. the root
ROOT_KEY="$SUITE arm64 essential $PACKAGES v1"
ROOT_TAR=$EMU_CACHE/root-$SUITE-arm64-$(echo "$ROOT_KEY" | sha256sum | cut -c1-12).tar
if stamp_ok root "$ROOT_KEY" && [ -x "$EMU_ROOT/usr/bin/python3" ]; then
  emu_say "root: $EMU_ROOT (Debian $SUITE arm64) is there"
else
  rm -f "$EMU_STAMPS"/*
  if [ ! -f "$ROOT_TAR" ]; then
    emu_say "root: building Debian $SUITE arm64 ($PACKAGES) with mmdebstrap from $MIRROR" \
            "into $ROOT_TAR (package scripts run under QEMU: about 1.5-3 min)"
    mmdebstrap --quiet --format=tar --arch=arm64 --variant=essential --include="$PACKAGES" \
      "$SUITE" "$ROOT_TAR.part" "$MIRROR" || emu_die "mmdebstrap failed (network? mirror $MIRROR)"
    mv "$ROOT_TAR.part" "$ROOT_TAR"
  fi
  emu_say "root: unpacking $ROOT_TAR into $EMU_ROOT"
  if [ -d "$EMU_ROOT" ]; then
    grep -q " $EMU_ROOT/" /proc/mounts && emu_die "something is mounted under $EMU_ROOT (a run.sh" \
      "still running?): stop it first"
    rm -rf "$EMU_ROOT"
  fi
  mkdir -p "$EMU_ROOT"
  tar -C "$EMU_ROOT" -xf "$ROOT_TAR"
  echo "$ROOT_KEY" > "$EMU_STAMPS/root"
fi
chroot "$EMU_ROOT" /usr/bin/python3 -c 'import platform; assert platform.machine() == "aarch64"' \
  || emu_die "the root's arm64 python3 does not run: QEMU/binfmt_misc is not working"

# 4. venv + wheels
if [ ! -x "$EMU_ROOT$EMU_VENV/bin/python" ]; then
  emu_say "venv: creating $EMU_VENV in the root (python3 -m venv --without-pip, under QEMU)"
  chroot "$EMU_ROOT" /usr/bin/python3 -m venv --without-pip "$EMU_VENV"
  rm -f "$EMU_STAMPS/wheels" "$EMU_STAMPS/edgebench"
fi
HOST_PY=$(emu_host_python)
WHEELS_KEY=$(sha256sum "$REQ" | cut -c1-16)
if stamp_ok wheels "$WHEELS_KEY"; then
  emu_say "wheels: requirements-aarch64.txt already installed"
else
  LOG=$EMU_DIR/pip.log
  pip_install() {
    "$HOST_PY" -m pip install -q --disable-pip-version-check --no-deps --no-index \
      --find-links "$EMU_CACHE/wheels" "${PLATFORM[@]}" --target "$SITE" --upgrade -r "$REQ" \
      >"$LOG" 2>&1
  }
  if pip_install; then
    emu_say "wheels: installed into $EMU_VENV from the cached aarch64 wheels"
  else
    emu_say "wheels: downloading aarch64 wheels of requirements-aarch64.txt into $EMU_CACHE/wheels"
    "$HOST_PY" -m pip download -q --disable-pip-version-check --no-deps "${PLATFORM[@]}" \
      -r "$REQ" -d "$EMU_CACHE/wheels" >"$LOG" 2>&1 \
      || { tail -n 5 "$LOG" >&2; emu_die "pip download of the aarch64 wheels failed ($LOG)"; }
    emu_say "wheels: installing into $EMU_VENV (host pip, --target, no dependency resolution)"
    pip_install || { tail -n 5 "$LOG" >&2; emu_die "pip install of the aarch64 wheels failed ($LOG)"; }
  fi
  rm -rf "${SITE:?}/bin"       # console scripts with the host's shebang; use python -m inside
  echo "$WHEELS_KEY" > "$EMU_STAMPS/wheels"
fi

# 5. edgebench, editable (the repository is mounted at the same path inside the root)
EB_KEY="$EMU_REPO $(sha256sum "$EMU_REPO/pyproject.toml" | cut -c1-16)"
if stamp_ok edgebench "$EB_KEY"; then
  emu_say "edgebench: installed (editable, $EMU_REPO)"
else
  emu_say "edgebench: installing editable from $EMU_REPO (no dependencies: step 4 has them)"
  tmp=$(mktemp -d)
  "$HOST_PY" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
    --no-index --target "$tmp" -e "$EMU_REPO" >/dev/null 2>&1 \
    || { rm -rf "$tmp"; emu_die "pip install -e $EMU_REPO failed"; }
  rm -rf "$SITE"/__editable__*edgebench* "$SITE"/edgebench-*.dist-info
  cp -r "$tmp"/__editable__* "$tmp"/edgebench-*.dist-info "$SITE/"
  rm -rf "$tmp"
  echo "$EB_KEY" > "$EMU_STAMPS/edgebench"
fi

# QEMU work-around for psutil (see the module's docstring), loaded at interpreter start-up.
cp "$EMU_REPO/jetson/emulated/_edgebench_emulated_qemu.py" "$SITE/"
echo "import _edgebench_emulated_qemu" > "$SITE/_edgebench_emulated_qemu.pth"

# 6. MLPerf's LoadGen from its sdist, compiled for the root: cross-compiled on the host where
# it can be (its Python is the root's minor version and Debian's aarch64-linux-gnu-g++ is
# there: setup.sh at the repository root installs it for TVM's Jetson export), else under QEMU
LG_PIN=$(grep -o '"mlcommons-loadgen==[^"]*"' "$EMU_REPO/pyproject.toml" | tr -d '"')
# The built wheel depends on the suite (glibc, g++) and the Python, not on the root's other
# packages: a package added to the root does not rebuild it.
LG_KEY="$LG_PIN $SUITE arm64 python$EMU_PY"
LG_DIR=$EMU_CACHE/loadgen
if stamp_ok loadgen "$LG_KEY" && [ -n "$(ls "$SITE"/mlperf_loadgen*.so 2>/dev/null)" ]; then
  emu_say "loadgen: $LG_PIN installed (built from its sdist for the root)"
else
  LOG=$EMU_DIR/loadgen.log
  mkdir -p "$LG_DIR"
  WHEEL=""
  for w in "$LG_DIR"/mlcommons_loadgen-*-linux_aarch64.whl; do [ -f "$w" ] && WHEEL=$w; done
  if [ -z "$WHEEL" ] || [ "$(cat "$LG_DIR/key" 2>/dev/null)" != "$LG_KEY" ]; then
    rm -f "$LG_DIR"/*.whl
    emu_say "loadgen: building $LG_PIN from its sdist for the root"
    # The sdist and its build requirements (pybind11 2.11.1, setuptools, wheel: pure Python)
    # come from PyPI on the host.
    if ! { "$HOST_PY" -m pip download -q --disable-pip-version-check --no-deps \
             --no-binary :all: "$LG_PIN" -d "$LG_DIR" >"$LOG" 2>&1 &&
           "$HOST_PY" -m pip install -q --disable-pip-version-check --no-deps --upgrade \
             --target "$EMU_ROOT/opt/loadgen-build/tools" "pybind11==2.11.1" \
             "setuptools==80.9.0" "wheel==0.45.1" >>"$LOG" 2>&1; }; then
      tail -n 5 "$LOG" >&2
      emu_die "downloading $LG_PIN's sdist and build tools failed ($LOG)"
    fi
    B=$EMU_ROOT/opt/loadgen-build
    rm -rf "$B/src" "$B/dist" && mkdir -p "$B/src"
    tar -C "$B/src" --strip-components=1 -xzf "$LG_DIR"/mlcommons_loadgen-*.tar.gz
    t=$SECONDS
    SYSCONFIG=_sysconfigdata__linux_aarch64-linux-gnu
    # Cross only with the root's GCC major version: a newer g++'s libstdc++ symbols would
    # not load against the root's libstdc++.
    ROOT_GCC=$(find "$EMU_ROOT/usr/lib/gcc/aarch64-linux-gnu" -mindepth 1 -maxdepth 1 -printf "%f\n" 2>/dev/null | head -n 1)
    if [ "${EDGEBENCH_EMULATED_LOADGEN_BUILD:-cross}" = cross ] \
       && command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 \
       && [ -n "$ROOT_GCC" ] && [ "$(aarch64-linux-gnu-g++ -dumpversion)" = "$ROOT_GCC" ] \
       && [ "$("$HOST_PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$EMU_PY" ] \
       && [ -f "$EMU_ROOT/usr/lib/python$EMU_PY/$SYSCONFIG.py" ]; then
      # The host's Python runs setup.py with the root's build configuration (its compiler
      # aarch64-linux-gnu-g++, its extension suffix and platform tag); Python.h and the
      # aarch64 pyconfig.h come from the root, the C library headers from the cross toolchain.
      how="cross-compiled on the host with $(aarch64-linux-gnu-g++ -dumpfullversion 2>/dev/null | sed 's/^/aarch64-linux-gnu-g++ /')"
      mkdir -p "$B/sysconfig" && cp "$EMU_ROOT/usr/lib/python$EMU_PY/$SYSCONFIG.py" "$B/sysconfig/"
      inc="-I$EMU_ROOT/usr/include/python$EMU_PY -idirafter $EMU_ROOT/usr/include"
      (cd "$B/src" && env _PYTHON_SYSCONFIGDATA_NAME=$SYSCONFIG _PYTHON_HOST_PLATFORM=linux-aarch64 \
         PYTHONPATH="$B/tools:$B/sysconfig" CFLAGS="-std=c++14 $inc" CPPFLAGS="$inc" CXXFLAGS="$inc" \
         "$HOST_PY" setup.py -q bdist_wheel -d "$B/dist") >>"$LOG" 2>&1 \
        || { tail -n 20 "$LOG" >&2; emu_die "cross-compiling $LG_PIN on the host failed ($LOG;" \
               "EDGEBENCH_EMULATED_LOADGEN_BUILD=qemu builds it in the root instead)"; }
    else
      how="built with the root's g++ under QEMU"
      emu_say "loadgen: building in the root with its g++ under QEMU (minutes)"
      chroot "$EMU_ROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp CFLAGS=-std=c++14 \
        PYTHONPATH=/opt/loadgen-build/tools /bin/sh -c \
        "cd /opt/loadgen-build/src && $EMU_VENV/bin/python setup.py -q bdist_wheel -d /opt/loadgen-build/dist" \
        >>"$LOG" 2>&1 || { tail -n 20 "$LOG" >&2; emu_die "building $LG_PIN in the root failed ($LOG)"; }
    fi
    cp "$B"/dist/mlcommons_loadgen-*-linux_aarch64.whl "$LG_DIR/"
    echo "$LG_KEY" > "$LG_DIR/key"
    rm -rf "$B"
    emu_say "loadgen: $how in $((SECONDS - t)) s"
    for w in "$LG_DIR"/mlcommons_loadgen-*-linux_aarch64.whl; do WHEEL=$w; done
  fi
  # A wheel is a zip laid out for site-packages.
  "$HOST_PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$WHEEL" "$SITE"
  echo "$LG_KEY" > "$EMU_STAMPS/loadgen"
fi

# 7. jetson-stats (jtop), as jetson/setup-jetpack6.sh installs it on a board: system-wide
# (`sudo pip3 install jetson-stats`: the package in /usr/local/lib/python3.X/dist-packages,
# the `jtop` script in /usr/local/bin, the service's unit file in /usr/local/share), the
# `jtop` group its socket belongs to, and the client in the venv. pip runs on the host (the
# wheels are pure Python); there is no systemd in a chroot: jetson/emulated/jtop.sh starts the
# service with the unit file's own command and environment.
JTOP_REQ=$EMU_REPO/jetson/emulated/requirements-jtop.txt
JTOP_KEY=$(sha256sum "$JTOP_REQ" | cut -c1-16)
JTOP_SYS=$EMU_ROOT/usr/local/lib/python$EMU_PY/dist-packages
if stamp_ok jtop "$JTOP_KEY" && [ -x "$EMU_ROOT/usr/local/bin/jtop" ]; then
  emu_say "jtop: jetson-stats installed (service system-wide, client in the venv)"
else
  emu_say "jtop: installing $(grep -o '^jetson-stats==[^ ]*' "$JTOP_REQ") system-wide and into the venv"
  LOG=$EMU_DIR/jtop.log
  tmp=$(mktemp -d)
  "$HOST_PY" -m pip install -q --disable-pip-version-check --no-deps --target "$tmp"     -r "$JTOP_REQ" >"$LOG" 2>&1 || { tail -n 5 "$LOG" >&2; rm -rf "$tmp"; emu_die "pip install of jetson-stats failed ($LOG)"; }
  mkdir -p "$JTOP_SYS" "$EMU_ROOT/usr/local/bin" "$EMU_ROOT/usr/local/share"
  rm -rf "$EMU_ROOT/usr/local/share/jetson_stats"
  mv "$tmp/share/jetson_stats" "$EMU_ROOT/usr/local/share/jetson_stats"
  for s in jtop jetson_release; do     # the console scripts, with the root's Python
    sed '1s|.*|#!/usr/bin/python3|' "$tmp/bin/$s" > "$EMU_ROOT/usr/local/bin/$s"
    chmod 755 "$EMU_ROOT/usr/local/bin/$s"
  done
  rm -rf "${tmp:?}/bin" "${tmp:?}/share" "${tmp:?}/example.py"
  cp -r "$tmp"/. "$JTOP_SYS/"
  cp -r "$tmp"/. "$SITE/"
  rm -rf "$tmp"
  # `groupadd jtop` (jtop.service's set_service_permission), root in it
  grep -q '^jtop:' "$EMU_ROOT/etc/group" || echo "jtop:x:998:root" >> "$EMU_ROOT/etc/group"
  echo "$JTOP_KEY" > "$EMU_STAMPS/jtop"
fi

# 8. the recreated AGX Orin system
emu_say "tegra: recreated AGX Orin files (/etc/nv_tegra_release R36.4.4, nvpmodel.conf," \
        "nvpmodel, jetson_clocks and tegrastats stand-ins, device tree, clocks, INA3221 rails)"
"$HOST_PY" "$EMU_REPO/jetson/emulated/tegra.py" install "$EMU_ROOT"
date -u +%FT%TZ > "$EMU_STAMPS/ready"

emu_say "check: $("$EMU_REPO/jetson/emulated/run.sh" python -c '
import json, platform
from importlib.metadata import version as v
from edgebench import sysinfo
d = sysinfo.device()
print(d["name"], "on", d["arch"], "| python", platform.python_version(), "|",
      ", ".join(f"{p} {v(p)}" for p in ("torch", "onnxruntime", "apache-tvm", "jax",
                                          "mlcommons-loadgen")))
' 2>&1 | tail -n 1)"
emu_say "done in $((SECONDS - T0)) s: jetson/emulated/run.sh CMD... runs CMD in the emulated Orin"
