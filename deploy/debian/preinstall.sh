#!/bin/sh
# Creates the system user the service runs as. In an installation into another root without
# chroot (dpkg --root DIR --force-script-chrootless, which sets DPKG_ROOT), in that root's
# /etc files and never on the running system.
set -e
if [ -n "${DPKG_ROOT:-}" ]; then
	if ! grep -q '^palaver:' "$DPKG_ROOT/etc/passwd"; then
		useradd --prefix "$DPKG_ROOT" --system --user-group --home-dir /var/lib/palaver \
			--no-create-home --shell /usr/sbin/nologin palaver
	fi
	exit 0
fi
if ! getent passwd palaver >/dev/null; then
	adduser --system --group --home /var/lib/palaver --no-create-home --quiet palaver
fi
