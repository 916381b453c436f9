#!/bin/sh
# apt-nonfree: add Debian's contrib and non-free components (the CUDA
# packages) for the suite of the image's own Debian apt source, from the
# same mirror (deb822 debian.sources, as in debian:bookworm-slim, or a
# one-line sources.list, as debootstrap writes). Used by Dockerfile.gpu.
set -eu
uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v -- '-security' | head -n 1)
[ -n "$uri" ] || uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\)[[:space:]].*/\2/p' /etc/apt/sources.list 2>/dev/null | grep -v -- '-security' | head -n 1)
[ -n "$uri" ] || { echo "apt-nonfree: no Debian apt source in /etc/apt" >&2; exit 1; }
. /etc/os-release
printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: contrib non-free non-free-firmware\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
	"$uri" "$VERSION_CODENAME" "$VERSION_CODENAME" >/etc/apt/sources.list.d/debian-nonfree.sources
echo "apt-nonfree: contrib non-free from $uri ($VERSION_CODENAME)"
