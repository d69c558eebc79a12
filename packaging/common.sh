# shellcheck shell=bash
# Shared by packaging/deb.sh and packaging/rpm.sh (sourced from the source tree's root).

# stage_install BUILD DESTDIR PREFIX SLURM_PLUGIN_DIR: `make install` of what is built, the
# plugstack snippet to PREFIX/share/gputopo/plugstack.conf (a package never edits
# plugstack.conf; the admin links the snippet).
stage_install() {
    make -s --no-print-directory -o all install BUILD="$1" DESTDIR="$2" PREFIX="$3" SLURM_PLUGIN_DIR="$4" \
        PLUGSTACK_CONF="$3/share/gputopo/plugstack.conf" >/dev/null
    # The man pages name this install's paths (Makefile MAN_PATHS), never /usr/local's.
    if [ "$3" != /usr/local ] && grep -l '/usr/local/' "$2$3"/share/man/man*/* >&2; then
        echo "packaging: the man pages above name /usr/local/ in a $3 package" >&2
        return 1
    fi
}

# split_debug STAGE DEBUGROOT: every ELF file under STAGE is stripped (shared objects
# --strip-unneeded, programs fully), its debug info kept as DEBUGROOT/.build-id/xx/yyyy.debug.
split_debug() {
    local stage=$1 dbgroot=$2 f id dbgfile
    while IFS= read -r -d '' f; do
        [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
        id=$(readelf -n "$f" | awk '/Build ID:/ {print $3}')
        [ -n "$id" ] || { echo "packaging: $f has no build id" >&2; return 1; }
        dbgfile=$dbgroot/.build-id/${id:0:2}/${id:2}.debug
        mkdir -p "$(dirname "$dbgfile")"
        objcopy --only-keep-debug --compress-debug-sections "$f" "$dbgfile"
        chmod 0644 "$dbgfile"
        case "$f" in
            *.so) strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f" ;;
            *) strip --remove-section=.comment --remove-section=.note "$f" ;;
        esac
        objcopy --add-gnu-debuglink="$dbgfile" "$f"
    done < <(find "$stage" -type f -print0)
}

# slurm_next_major 22.05 -> 22.06: the first version a package built for a major refuses.
slurm_next_major() {
    local maj=${1%%.*} min=${1#*.}
    printf '%s.%02d' "$maj" $((10#$min + 1))
}

# shlib_depends STAGE: the Depends entries for the shared libraries STAGE's ELF files link
# (dpkg-shlibdeps). The plugin's Slurm symbols come from the process that loads it.
shlib_depends() {
    local stage=$1 tmp files=()
    tmp=$(mktemp -d)
    mkdir -p "$tmp/debian"
    printf 'Source: gputopo\n\nPackage: gputopo\nArchitecture: any\n' > "$tmp/debian/control"
    while IFS= read -r -d '' f; do
        [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && files+=("-e$(realpath "$f")")
    done < <(find "$stage" -type f -print0)
    (cd "$tmp" && dpkg-shlibdeps -O "${files[@]}" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
    rm -rf "$tmp"
}
