#!/usr/bin/env bash
# The installed package, used as a user would (README "Installing"):
#   - make install prefix=DIR into a temporary prefix, which is then moved
#     elsewhere (a relocated installation: nothing may point back to DIR);
#   - starnn.pc there names the prefix it is in (pkg-config --variable);
#   - every installed header compiles on its own with
#     `pkg-config --cflags starnn` (none needs a header left uninstalled,
#     or config.h);
#   - an out-of-tree program (creates two tensors, submits starnn_axpy,
#     checks y = 2 x + y) builds with `pkg-config --cflags --libs starnn`
#     and an rpath to the -L directories it names, and runs;
#   - the installed mlp and unet run;
# all without LD_LIBRARY_PATH. A few seconds (make install, ~45 headers, one
# small program, 3 steps of the MLP).
set -uo pipefail
top=$(cd "${top_builddir:-.}" && pwd)
command -v pkg-config > /dev/null || { echo "SKIP: no pkg-config"; exit 77; }
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
unset LD_LIBRARY_PATH

# The shell tests run once every program is built (the Makefile's rule for
# their logs): make install builds nothing, so it cannot race with the
# tests beside it; it says so if it ever did.
unset MAKEFLAGS MFLAGS MAKELEVEL
if ! make -C "$top" -s install prefix="$tmp/inst" > "$tmp/install.log" 2>&1; then
	tail -n 20 "$tmp/install.log"
	echo "FAIL: make install prefix=$tmp/inst"
	exit 1
fi
built=$(grep -E '^ +(CC|CCLD|GEN|NVCC) ' "$tmp/install.log" | head -n 3)
[ -z "$built" ] || fail "make install built something (the tree was not built first): $built"
mv "$tmp/inst" "$tmp/moved"
P=$tmp/moved
for f in bin/mlp bin/unet lib/libstarnn.so lib/pkgconfig/starnn.pc include/starnn/runtime/starnn.h; do
	[ -e "$P/$f" ] || fail "$f is not installed"
done

# pkg-config: the moved prefix. A StarPU outside pkg-config's default path
# (tools/setup --starpu=source) is found where configure found it.
export PKG_CONFIG_PATH=$P/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
starpu_prefix=$(sed -n 's/^ *StarPU *: .* in \(.*\)$/\1/p' "$top/config.summary")
[ -z "$starpu_prefix" ] || PKG_CONFIG_PATH+=:$starpu_prefix/lib/pkgconfig
if ! flags=$(pkg-config --cflags --libs starnn 2>&1); then
	fail "pkg-config starnn: $flags"
fi
prefix=$(pkg-config --variable=prefix starnn)
if [ "$(cd "$prefix" 2> /dev/null && pwd -P)" = "$(cd "$P" && pwd -P)" ]; then
	ok "starnn.pc names the prefix it is in ($prefix)"
else
	fail "starnn.pc says prefix=$prefix, installed in $P"
fi
read -r -a CFLAGS <<< "$(pkg-config --cflags starnn)"
read -r -a LIBS <<< "$(pkg-config --libs starnn)"
RPATH=()
for d in $(pkg-config --libs-only-L starnn); do RPATH+=("-Wl,-rpath,${d#-L}"); done
# a sanitizer build's library needs its runtime in the program
SAN=()
grep -q '^ *sanitizers *: yes' "$top/config.summary" && SAN=(-fsanitize=address,undefined -fno-omit-frame-pointer)

# -Werror on our headers, not on CUDA's: a StarPU built with CUDA 13 pulls
# in cusparse.h, whose declarations are marked deprecated (the tree builds
# with the same -Wno-deprecated-declarations there: configure.ac).
WERROR=(-Wall -Werror -Wno-deprecated-declarations)

bad=0 n=0
while read -r h; do
	n=$((n + 1))
	printf '#include "%s"\n' "$h" | "$CC" -std=gnu11 -fsyntax-only "${WERROR[@]}" -x c - "${CFLAGS[@]}" \
		> "$tmp/h.err" 2>&1 || { fail "$h does not compile on its own: $(head -n 3 "$tmp/h.err")"; bad=1; }
done < <(cd "$P/include/starnn" && find . -name '*.h' | sed 's|^\./||' | sort)
[ "$bad" = 1 ] || ok "the $n installed headers compile on their own"

cat > "$tmp/axpy_user.c" << 'EOF'
/* y = 2 x + y on starnn, out of tree. */
#include <stdio.h>

#include "codelets/axpy.h"
#include "runtime/starnn.h"

int main(void)
{
	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.quiet = 1;
	if (starnn_init(&cfg))
		return 1;
	starnn_tensor *x = NULL, *y = NULL;
	float xv[8], yv[8];
	for (int i = 0; i < 8; i++)
		xv[i] = (float)i, yv[i] = 1.0f;
	int rc = starnn_tensor_new(&x, "x", STARNN_FP32, 1, 8);
	if (!rc)
		rc = starnn_tensor_new(&y, "y", STARNN_FP32, 1, 8);
	if (!rc)
		rc = starnn_tensor_write(x, xv) || starnn_tensor_write(y, yv) || starnn_axpy(2.0f, x, y) ||
		     starnn_tensor_read(y, yv);
	for (int i = 0; i < 8 && !rc; i++)
		if (yv[i] != 2.0f * i + 1.0f)
			rc = 1;
	printf("axpy: y = 2 x + y: %s\n", rc ? "wrong" : "right");
	starnn_tensor_destroy(x);
	starnn_tensor_destroy(y);
	return starnn_shutdown() || rc;
}
EOF
if "$CC" -std=gnu11 "${WERROR[@]}" "${SAN[@]}" "${CFLAGS[@]}" "$tmp/axpy_user.c" -o "$tmp/axpy_user" "${LIBS[@]}" \
	"${RPATH[@]}" > "$tmp/cc.err" 2>&1; then
	out=$("$tmp/axpy_user" 2>&1)
	if [ $? = 0 ] && [ "$out" = "axpy: y = 2 x + y: right" ]; then
		ok "an out-of-tree program built with pkg-config starnn runs: $out"
	else
		fail "the out-of-tree program: $out"
	fi
else
	fail "the out-of-tree program does not build: $(head -n 5 "$tmp/cc.err")"
fi

out=$("$P/bin/mlp" --steps 3 --quiet 2>&1)
if [ $? = 0 ] && grep -q '^final: train loss' <<< "$out"; then
	ok "the installed mlp runs"
else
	fail "the installed mlp: $(head -n 5 <<< "$out")"
fi
out=$("$P/bin/unet" info --depth 2 --filters 4 2>&1)
if [ $? = 0 ]; then
	ok "the installed unet runs"
else
	fail "the installed unet info: $(head -n 5 <<< "$out")"
fi

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "PASS"
