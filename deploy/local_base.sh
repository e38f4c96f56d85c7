#!/bin/sh
# A stand-in for the Dockerfile's base image (python:3.11-slim), built from Debian's own packages,
# for a machine that reaches Debian's mirror but no container registry. Debian 12's python3 is 3.11;
# a virtual environment first on PATH gives the `python` and `pip` that python:3.11-slim has.
#   sh deploy/local_base.sh NAME [MIRROR]   (as root; needs debootstrap and buildah)
# tests/test_container.py builds the image on it:  buildah bud --build-arg BASE_IMAGE=NAME ...
set -eu
name="$1"
mirror="${2:-http://deb.debian.org/debian}"
root="$(mktemp -d)/rootfs"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$root" "$mirror"
chroot "$root" python3 -m venv /opt/python
# The machine's own certificate authorities too (a network that inspects TLS, as CI's does, signs
# PyPI's certificate with one), and pip told to use the system's list rather than its own.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null
fi
b="buildah --storage-driver vfs"
ctr="$($b from scratch)"
cp -a "$root/." "$($b mount "$ctr")/"
$b umount "$ctr" >/dev/null
$b config --env PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --env PIP_CERT=/etc/ssl/certs/ca-certificates.crt --cmd python3 "$ctr"
$b commit --rm -q "$ctr" "$name"
rm -rf "$(dirname "$root")"
