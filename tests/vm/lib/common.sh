# shellcheck shell=bash disable=SC2034 # settings are used by the sourcing scripts
# Shared code of the guest test lane (tests/vm). Sourced by build-cache.sh, the build steps in
# build/ and run-vm-test.sh; it only defines settings and functions.
#
# The lane boots a Debian sid guest (the suite that carries a QEMU with vfio-user-pci and a kernel
# whose ionic driver we test) under QEMU. Everything comes from Debian packages fetched through the
# mirror this machine's apt already uses, and everything lands in a cache directory outside the
# repository:
#
#   $VM_CACHE/hostroot      sid chroot: QEMU, compiler, kernel headers and source (QEMU runs here)
#   $VM_CACHE/guestroot     the guest's root file system, as a directory
#   $VM_CACHE/ionic_rdma    out-of-tree build of ionic_rdma.ko (Debian does not ship it)
#   $VM_CACHE/img           what QEMU boots: vmlinux, initrd.cpio, rootfs.ext4
#   $VM_CACHE/kver          the guest kernel ABI (e.g. 7.2.13+deb14-amd64), resolved once
#   $VM_CACHE/stamps/STEP   hash of the inputs each build step last completed with
#   $VM_CACHE/logs/         full output of every build step

VM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_DIR=$(dirname "$VM_LIB_DIR")
VM_CACHE=${ERNIC_VM_CACHE:-/var/cache/rocm-ernic-vm}
VM_SUITE=${ERNIC_VM_SUITE:-sid}
HOSTROOT=$VM_CACHE/hostroot
GUESTROOT=$VM_CACHE/guestroot
IMGDIR=$VM_CACHE/img
STAMPDIR=$VM_CACHE/stamps
VM_LOGDIR=$VM_CACHE/logs

# Everything informational goes to stderr as "# ..." so that stdout stays one ok/not ok per check.
note() { printf '# %s\n' "$*" >&2; }
die() { printf '# error: %s\n' "$*" >&2; exit 1; }

# The guest kernel ABI; empty until build/10-hostroot.sh has resolved it.
guest_kver() { cat "$VM_CACHE/kver" 2>/dev/null || true; }

# ---------------------------------------------------------------------------------------------
# Debian mirror: taken from the host's apt configuration every time, never stored in a file of
# the repository. ERNIC_VM_MIRROR overrides it.
#
# A source counts as the Debian archive when one of its suites is the host's own release
# (VERSION_CODENAME) or a Debian alias or codename without a -security/-updates/-backports
# suffix, and its components include main. deb822 files are read first, then one-line sources.
debian_mirror() {
	if [ -n "${ERNIC_VM_MIRROR:-}" ]; then
		echo "$ERNIC_VM_MIRROR"
		return 0
	fi
	local codename="" f uri
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	local suites_re="^(${codename:-none}|stable|testing|unstable|oldstable|sid|buster|bullseye|bookworm|trixie|forky|duke)$"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		uri=$(awk -v re="$suites_re" '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && enabled != "no" && comps ~ /(^| )main( |$)/ &&
				    uri ~ /^(https?|ftp|file):/) {
					n = split(suites, s, " ")
					for (i = 1; i <= n; i++) if (s[i] ~ re) { print uri; found = 1; exit }
				}
				types = uri = suites = comps = enabled = ""
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				key = tolower($1); sub(/:$/, "", key)
				val = $0; sub(/^[^:]*:[ \t]*/, "", val)
				if (key == "types") types = val
				else if (key == "uris") { split(val, u, " "); uri = u[1] }
				else if (key == "suites") suites = val
				else if (key == "components") comps = val
				else if (key == "enabled") enabled = tolower(val)
			}
			END { if (!found) flush() }' "$f")
		[ -n "$uri" ] && { echo "${uri%/}"; return 0; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(awk -v re="$suites_re" '
			$1 != "deb" { next }
			{
				i = 2
				if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				uri = $i; suite = $(i + 1); main = 0
				for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
				if (uri ~ /^(https?|ftp|file):/ && suite ~ re && main) { print uri; exit }
			}' "$f")
		[ -n "$uri" ] && { echo "${uri%/}"; return 0; }
	done
	return 1
}

# ---------------------------------------------------------------------------------------------
# Host prerequisites. On failure returns non-zero with the reason in PREREQ_REASON. Missing host
# packages are installed through apt-get, with the host's own apt configuration (never changed).
PREREQ_REASON=
host_prereqs() {
	local need=() cmd log
	if [ "$(id -u)" -ne 0 ]; then
		PREREQ_REASON="the VM lane needs root (debootstrap, chroot, mount namespaces)"
		return 1
	fi
	if [ ! -c /dev/net/tun ]; then
		PREREQ_REASON="/dev/net/tun is missing (load the tun module; in a container, pass the device in)"
		return 1
	fi
	for cmd in debootstrap:debootstrap unshare:util-linux flock:util-linux mountpoint:util-linux \
		chroot:coreutils sha256sum:coreutils timeout:coreutils; do
		command -v "${cmd%%:*}" >/dev/null 2>&1 || need+=("${cmd#*:}")
	done
	if [ ${#need[@]} -gt 0 ]; then
		note "installing host packages: ${need[*]}"
		log=$(mktemp "${TMPDIR:-/tmp}/ernic-vm-apt.XXXXXX")
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
			PREREQ_REASON="apt-get install ${need[*]} failed: $(tail -3 "$log" | tr '\n' ' ')"
			rm -f "$log"
			return 1
		fi
		rm -f "$log"
	fi
	if ! unshare --mount --propagation private true 2>/dev/null; then
		PREREQ_REASON="cannot create a mount namespace (unshare --mount failed: no CAP_SYS_ADMIN?)"
		return 1
	fi
	if [ -z "$(debian_mirror)" ]; then
		PREREQ_REASON="no Debian mirror in the host's apt configuration; set ERNIC_VM_MIRROR=URL"
		return 1
	fi
	return 0
}

# ---------------------------------------------------------------------------------------------
# Running commands in a chroot. Every call gets its own private mount namespace: /proc, /sys,
# /dev, a private /tmp and the extra binds exist only for that command and vanish with it, so
# nothing stays mounted on the host and the chroots can be deleted with a plain rm -rf.
#
#   chroot_exec ROOT [-b SRC:DST[:ro]]... [--] CMD ARGS...    replaces the calling shell
#   chroot_run  ROOT [-b SRC:DST[:ro]]... [--] CMD ARGS...    runs CMD and returns its status
#
# chroot_exec is for background jobs: "chroot_exec ... &" leaves $! as the pid that ends up
# running CMD (nsenter, unshare, bash, chroot and env all exec the next one). With CHROOT_NETNS
# set to the name of a network namespace (ip netns), CMD runs in that namespace.
chroot_exec() {
	local root=$1 binds=() netns=()
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		-b) binds+=("$2"); shift 2 ;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	[ -z "${CHROOT_NETNS:-}" ] || netns=(nsenter "--net=/run/netns/$CHROOT_NETNS" --)
	# shellcheck disable=SC2016 # expanded by the inner bash
	exec "${netns[@]}" unshare --mount --propagation private -- /bin/bash -ec '
		root=$1 nbinds=$2; shift 2
		mount -t proc proc "$root/proc"
		mount -t sysfs sysfs "$root/sys"
		mount --bind /dev "$root/dev"
		mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" 2>/dev/null || true
		mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
		mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
		while [ "$nbinds" -gt 0 ]; do
			spec=$1; shift; nbinds=$((nbinds - 1))
			src=${spec%%:*}; rest=${spec#*:}; dst=${rest%%:*}; opt=${rest#"$dst"}
			mkdir -p "$root$dst"
			mount --bind "$src" "$root$dst"
			[ "$opt" = :ro ] && mount -o remount,bind,ro "$root$dst"
		done
		cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
		exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive "$@"
	' chroot_exec "$root" "${#binds[@]}" "${binds[@]}" "$@"
}
chroot_run() { (chroot_exec "$@"); }

# apt-get in a chroot: quiet, no recommends, no suggests.
chroot_apt() {
	local root=$1
	shift
	chroot_run "$root" apt-get -y -q -o APT::Install-Recommends=false \
		-o APT::Install-Suggests=false -o Dpkg::Use-Pty=0 "$@"
}

# Install the packages of a chroot that are not installed yet (apt-get update first).
chroot_ensure_pkgs() {
	local root=$1 p missing=()
	shift
	for p in "$@"; do
		# shellcheck disable=SC2016 # a dpkg-query format
		chroot_run "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	note "installing in $(basename "$root"): ${missing[*]}"
	chroot_apt "$root" update
	chroot_apt "$root" install "${missing[@]}"
}

# A minbase $VM_SUITE tree at ROOT, made once. The mirror may be a frozen snapshot whose Release
# files are past their Valid-Until date, so apt inside the chroot is told not to mind; the
# host's apt configuration is left alone.
ensure_chroot() {
	local root=$1 mirror
	[ -e "$root/.ernic-debootstrap-done" ] && return 0
	mirror=$(debian_mirror) || die "no Debian mirror in the host's apt configuration; set ERNIC_VM_MIRROR"
	note "debootstrap $VM_SUITE into $root"
	rm -rf "$root"
	debootstrap --variant=minbase "$VM_SUITE" "$root" "$mirror"
	echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99ernic-snapshot"
	# No daemon may start inside the chroot during package installation.
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	# Documentation is dead weight here.
	cat >"$root/etc/dpkg/dpkg.cfg.d/90ernic-nodoc" <<-'EOF'
		path-exclude=/usr/share/doc/*
		path-include=/usr/share/doc/*/copyright
		path-exclude=/usr/share/man/*
		path-exclude=/usr/share/info/*
		path-exclude=/usr/share/locale/*
		path-exclude=/usr/share/lintian/*
	EOF
	touch "$root/.ernic-debootstrap-done"
}
