#!/usr/bin/env bash
# test_cluster_build.sh — the build without root (docs/cluster.md), as on a cluster with no
# -dev packages: GSL, HDF5, inih, OpenBLAS, OpenSSL's libcrypto and Check come from Debian's own .deb files,
# downloaded (apt-get download, cached in build/cluster-debs/) and unpacked with dpkg -x, never
# installed. In a private mount namespace every file of those packages on this machine (their
# headers, .pc files, .so links and the libraries themselves) is hidden, and the user nobody
#   A. builds ./stability with make PREFIX=DIR alone, DIR laid out as ./configure --prefix,
#      Spack views and conda environments leave it (DIR/include, DIR/lib, DIR/lib/pkgconfig);
#   B. builds it and the unit tests with pkg-config switched off and every library given by a
#      make variable (as with environment modules), from the unpacked tree as Debian lays it
#      out, and runs the unit tests (make unit);
# and each binary runs a tiny probe and reads it back, with ldd showing every one of the five
# libraries loaded from the prefix. Before building, the checks that the system's headers and
# .pc files are really hidden must fail to compile / find them.
# Needs root (the mount namespace and nobody) and Debian's archive (the first time); skipped
# with a message otherwise. Prints "ok - ..." / "not ok - ..." per check, then
# "cluster build: N passed, M failed"; exit 1 if M > 0.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
notok() { fail=$((fail + 1)); echo "not ok - $*"; }
finish() { echo "cluster build: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }
skip() { echo "cluster build: skipped: $*"; exit 0; }

[ "$(id -u)" = 0 ] || skip "hiding the system's libraries (a mount namespace) needs root"
for t in unshare setpriv dpkg apt-get; do
    command -v "$t" >/dev/null || skip "$t not found"
done
ARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
# the .deb files: the -dev packages and the libraries they belong to
DEV_PKGS=(libgsl-dev libhdf5-dev libinih-dev libopenblas-dev libopenblas-pthread-dev libssl-dev check
          libsubunit-dev)
LIB_PKGS=(libgsl27 libgslcblas0 libhdf5-103-1 libinih1 libopenblas0-pthread libssl3 libsubunit0)
DEBS=${STABILITY_DEB_CACHE:-$ROOT/build/cluster-debs}
mkdir -p "$DEBS"
missing=()
for p in "${DEV_PKGS[@]}" "${LIB_PKGS[@]}"; do
    compgen -G "$DEBS/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    (cd "$DEBS" && apt-get download "${missing[@]}") >"$DEBS/download.log" 2>&1 ||
        skip "apt-get download failed (no network?): $(tail -1 "$DEBS/download.log")"
fi

W=$(mktemp -d /tmp/stability_cluster.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# the sources as a user would have them (the working tree's tracked and new files)
git ls-files -co --exclude-standard -z | tar -cf - --null -T - | (mkdir "$W/src" && tar -xf - -C "$W/src")
mkdir "$W/deb"
chown -R 65534:65534 "$W/src" "$W/deb"
for d in "$DEBS"/*.deb; do
    HOME=$W "${NOBODY[@]}" dpkg -x "$d" "$W/deb" || { notok "dpkg -x $(basename "$d") as nobody"; finish; }
done
P=$W/deb/usr
L=$P/lib/$ARCH

# A's prefix: the unpacked files in the layout of ./configure --prefix, with .pc files there
A=$W/local
mkdir -p "$A/include" "$A/lib/pkgconfig"
cp -a "$P/include/gsl" "$P/include/ini.h" "$P/include/check.h" "$P/include/check_stdint.h" "$A/include/"
cp -a "$P/include/hdf5/serial/." "$A/include/"
cp -a "$P/include/openssl" "$A/include/" && cp -a "$P/include/$ARCH/openssl/." "$A/include/openssl/"
cp -a "$L"/libgsl.so* "$L"/libgslcblas.so* "$L"/libinih.so* "$L"/libcheck_pic.a "$L"/libsubunit.so* \
      "$L"/libhdf5_serial.so* "$L"/openblas-pthread/libopenblas*.so* "$L"/libcrypto.so* "$L"/libssl.so* \
      "$A/lib/"   # libssl: libhdf5's libcurl needs it, and libssl3's files are hidden with libcrypto
ln -s libhdf5_serial.so "$A/lib/libhdf5.so"
pc() {   # pc NAME LIBS [REQUIRES-PRIVATE-FREE CFLAGS]
    printf 'prefix=%s\nlibdir=${prefix}/lib\nincludedir=${prefix}/include\n\nName: %s\nDescription: %s\nVersion: 1\nLibs: -L${libdir} %s\nCflags: -I${includedir} %s\n' \
        "$A" "$1" "$1" "$2" "${3:-}" > "$A/lib/pkgconfig/$1.pc"
}
pc gsl "-lgsl -lgslcblas -lm"
pc hdf5 "-lhdf5"
pc inih "-linih"
pc openblas "-lopenblas"
pc libcrypto "-lcrypto"
pc check "-lcheck_pic -lsubunit -lrt -lm -pthread" "-pthread"
chown -R 65534:65534 "$A"

# In the namespace: hide every file of those packages (their directories by an empty tmpfs,
# every other file by /dev/null), then run the rest as nobody.
cat > "$W/inside.sh" <<'EOF'
set -u
W=$1 ARCH=$2
shift 2
for d in /usr/include/gsl /usr/include/hdf5 /usr/include/subunit /usr/include/openssl \
         "/usr/include/$ARCH/openssl" \
         "/usr/include/$ARCH/openblas-pthread" "/usr/lib/$ARCH/hdf5" "/usr/lib/$ARCH/openblas-pthread" \
         "/usr/lib/$ARCH/pkgconfig" /usr/lib/pkgconfig /usr/share/pkgconfig; do
    [ -d "$d" ] && mount -t tmpfs -o size=64k,mode=755 tmpfs "$d"
done
n=0
while read -r f; do
    case "$f" in /usr/include/*|/usr/lib/*) ;; *) continue ;; esac
    if [ -f "$f" ] && [ ! -d "$f" ]; then mount --bind /dev/null "$f" && n=$((n + 1)); fi
done < <(dpkg -L "$@" 2>/dev/null; ls -d /usr/lib/$ARCH/libopenblas* /usr/lib/$ARCH/libhdf5* \
         /usr/lib/$ARCH/libgsl* /usr/lib/$ARCH/libinih* /usr/lib/$ARCH/libcrypto* 2>/dev/null)
echo "$n files hidden" > "$W/hidden"
cd "$W/src" && exec setpriv --reuid=65534 --regid=65534 --clear-groups \
    env -i PATH=/usr/bin:/bin HOME="$W" LC_ALL=C.UTF-8 bash "$W/build.sh" "$W" "$ARCH"
EOF

cat > "$W/build.sh" <<'EOF'
set -u
W=$1 ARCH=$2
P=$W/deb/usr L=$W/deb/usr/lib/$ARCH A=$W/local
say() { echo "$1" >> "$W/checks"; }
# the system's headers and .pc files are gone: each of these must fail
for h in "gsl/gsl_rng.h:gsl_rng_alloc(gsl_rng_mt19937)" "hdf5.h:H5open()" "ini.h:ini_parse(0,0,0)" \
         "check.h:suite_create(0)" "openssl/evp.h:EVP_MD_CTX_new()"; do
    printf '#include <%s>\nint main(void){ return (int)(long)%s; }\n' "${h%%:*}" "${h#*:}" > "$W/probe.c"
    if cc -Werror -I/usr/include/hdf5/serial -c -o "$W/probe.o" "$W/probe.c" 2>/dev/null; then
        say "FAIL system header ${h%%:*} still usable"
    else
        say "ok system header ${h%%:*} hidden"
    fi
done
for p in gsl hdf5 inih openblas libcrypto check; do
    if pkg-config --exists "$p"; then say "FAIL system $p.pc still found"; else say "ok system $p.pc hidden"; fi
done
[ "$(id -u)" = 65534 ] && say "ok building as nobody (uid 65534)" || say "FAIL building as uid $(id -u)"
# A: PREFIX alone
if make -j2 PREFIX="$A" stability > "$W/make-a.log" 2>&1; then
    say "ok A: make PREFIX=$A"
    mv stability "$W/stability-a"
else
    say "FAIL A: make PREFIX=... failed: $(grep -m1 -E 'error:|Error [0-9]|undefined reference' "$W/make-a.log")"
fi
make clean >/dev/null
# B: no pkg-config, every library by a make variable, the Debian tree as unpacked
VARS=(PKG_CONFIG=false
      GSL_CFLAGS="-I$P/include" GSL_LIBS="-L$L -lgsl"
      HDF5_CFLAGS="-I$P/include/hdf5/serial" HDF5_LIBS="-L$L/hdf5/serial -lhdf5"
      INIH_CFLAGS="-I$P/include" INIH_LIBS="-L$L -linih"
      BLAS_LIBS="-L$L/openblas-pthread -lopenblas"
      CRYPTO_CFLAGS="-I$P/include -I$P/include/$ARCH" CRYPTO_LIBS="-L$L -lcrypto"
      CHECK_CFLAGS="-I$P/include -pthread" CHECK_LIBS="-L$L -lcheck_pic -lsubunit -lrt -lm -pthread")
if make -j2 "${VARS[@]}" stability build/test_runner > "$W/make-b.log" 2>&1; then
    say "ok B: make with PKG_CONFIG=false and GSL_/HDF5_/INIH_/BLAS_/CRYPTO_/CHECK_ variables"
    # the unit tests that call PyTorch (tag "torch") cannot run here: numpy needs the libblas
    # hidden above; make unit runs them on the system's libraries
    if CK_EXCLUDE_TAGS=torch make "${VARS[@]}" unit > "$W/unit.log" 2>&1; then
        say "ok B: make unit: $(grep -E '^[0-9]+%: Checks' "$W/unit.log" | tail -1)"
    else
        say "FAIL B: make unit: $(grep -E '^[0-9]+%: Checks|error' "$W/unit.log" | tail -2 | tr '\n' ' ')"
    fi
    mv stability "$W/stability-b"
else
    say "FAIL B: make failed: $(grep -m1 -E 'error:|Error [0-9]|undefined reference' "$W/make-b.log")"
fi
# each binary: the four libraries from the prefix, a tiny probe written and read back
for v in a b; do
    exe=$W/stability-$v
    [ -x "$exe" ] || continue
    libs=$(ldd "$exe" | grep -E 'libgsl\.|libhdf5|libinih|libopenblas|libcrypto')
    outside=$(echo "$libs" | grep -v "=> $W/" )
    if [ "$(echo "$libs" | wc -l)" -ge 5 ] && [ -z "$outside" ]; then
        say "ok ${v^^}: libgsl, libhdf5, libinih, libopenblas, libcrypto all load from the prefix"
    else
        say "FAIL ${v^^}: libraries: $(echo "$libs" | tr '\n' ' ')"
    fi
    if "$exe" --config configs/tiny.ini --set probe.seeds=2 --set probe.batches=1 --out "$W/p-$v.h5" --quiet &&
        "$exe" info "$W/p-$v.h5" > "$W/info-$v" 2>&1 && grep -q 'done' "$W/info-$v"; then
        say "ok ${v^^}: a tiny probe runs, and info reads its file (status done)"
    else
        say "FAIL ${v^^}: tiny probe or info: $(tail -2 "$W/info-$v" 2>/dev/null | tr '\n' ' ')"
    fi
done
EOF
chmod 755 "$W/inside.sh" "$W/build.sh"
touch "$W/checks" && chown 65534:65534 "$W/checks" "$W"
t0=$SECONDS
unshare --mount --propagation private bash "$W/inside.sh" "$W" "$ARCH" "${DEV_PKGS[@]}" "${LIB_PKGS[@]}"
echo "  ($(cat "$W/hidden" 2>/dev/null); builds and tests took $((SECONDS - t0)) s)"
while read -r status text; do
    if [ "$status" = ok ]; then ok "$text"; else notok "$text"; fi
done < "$W/checks"
[ "$pass" -ge 19 ] || notok "only $pass checks passed of the 19 expected (a build step did not run)"
finish
